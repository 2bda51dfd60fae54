"""Every action of a gate build runs in Bazel's linux-sandbox, without network.

The patch's BUILD files are hostile: a `genrule(local = 1)` or a `no-sandbox`
tag would otherwise run its command on the host, free to write into the user's
checkout or the output base a later score reuses. So every bazel build or test
the CLI runs forces the linux-sandbox strategy for every mnemonic, allows no
fallback to local execution, strips the execution requirements that opt out of
the sandbox or its network block, and mounts fresh tmpfs on /tmp and /dev/shm
(Bazel 4.2.3 otherwise leaves both writable and shared). A machine without a
working linux-sandbox fails closed (`probe`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from agent_gate.drive.exit_codes import CliError

TMPFS_PATHS = ("/tmp", "/dev/shm")
# Execution requirements a BUILD file can set (tags, `local = 1`) to leave the
# sandbox, reach the network, or escape the strategy forced below.
OPT_OUT_KEYS = (
    "local",
    "no-sandbox",
    "nosandbox",  # the legacy spelling, still honoured by Bazel 7
    "no-remote",
    "no-remote-exec",
    "no-remote-cache",
    "no-cache",
    "requires-network",
    "supports-workers",
    "supports-multiplex-workers",
    "requires-worker-protocol",
)
# Mnemonics whose strategy has its own flag; every other one follows spawn_strategy.
_MNEMONICS = ("Genrule", "TestRunner")
_PROBE_SECONDS = 20.0


def flags() -> list[str]:
    """The build flags that sandbox every action of the build."""
    strategies = [f"--strategy={mnemonic}=linux-sandbox" for mnemonic in _MNEMONICS]
    return [
        "--spawn_strategy=linux-sandbox",
        "--genrule_strategy=linux-sandbox",
        *strategies,
        "--noincompatible_legacy_local_fallback",
        "--modify_execution_info=" + ",".join(f".*=-{key}" for key in OPT_OUT_KEYS),
        "--sandbox_default_allow_network=false",
        "--noworker_sandboxing",
        "--noexperimental_enable_docker_sandbox",
        *(f"--sandbox_tmpfs_path={path}" for path in TMPFS_PATHS),
    ]


def check_layout(paths: Sequence[tuple[str, Path]]) -> None:
    """Refuse an output base or workspace under a path the sandbox mounts tmpfs on.

    linux-sandbox cannot hide /tmp from an action whose execroot lies below it, and
    without that tmpfs every action could write there: into that very output base.
    """
    for what, path in paths:
        resolved = path.resolve()
        for tmpfs in TMPFS_PATHS:
            if resolved == Path(tmpfs) or Path(tmpfs) in resolved.parents:
                raise CliError(
                    f"the {what} {resolved} is under {tmpfs}, which every sandboxed action "
                    "gets as a private tmpfs; it must live elsewhere (set --output_base in "
                    "~/.bazelrc, or XDG_CACHE_HOME for the scoring worktree, outside "
                    f"{', '.join(TMPFS_PATHS)}); nothing was scored"
                )


def candidates(install_base: Path | None, real_bazel: str) -> list[Path]:
    """Where Bazel keeps its linux-sandbox: the install base, or Debian's share directory."""
    found = []
    if install_base is not None:
        found.append(install_base / "linux-sandbox")
    prefix = Path(real_bazel).resolve().parent.parent
    found.append(prefix / "share" / "bazel" / "linux-sandbox")
    return found


def probe(install_base: Path | None, real_bazel: str) -> Path:
    """Run linux-sandbox once with its network namespace; CliError if it cannot."""
    tried = candidates(install_base, real_bazel)
    for binary in tried:
        if not binary.is_file():
            continue
        try:
            done = subprocess.run(
                [str(binary), "-N", "--", "/bin/true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise _unavailable(f"{binary} could not run ({error})") from None
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip()[-400:] or "no message"
            raise _unavailable(f"{binary} -N -- /bin/true exited {done.returncode}: {why}")
        return binary
    raise _unavailable(f"no linux-sandbox binary at {', '.join(map(str, tried))}")


def _unavailable(why: str) -> CliError:
    return CliError(
        "linux-sandbox with network isolation is unavailable on this machine "
        f"({why}); the gate runs every action of a patch in it and never without it, so "
        "nothing was scored (fail closed). Run agent-gate where user namespaces are allowed "
        "(e.g. sysctl kernel.unprivileged_userns_clone=1, or a container with --privileged)"
    )
