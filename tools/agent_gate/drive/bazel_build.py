"""`bazel build //:agent_gate` in the scoring worktree, with failures explained.

Building the gate target (never testing it) is how the CLI reads the build graph:
without changed paths it runs no property and writes only the rule's config
(`bazel-bin/agent_gate.gate.json`: catalog, fixtures, ledger, debt cap); with a
changed path and a fresh run id it also runs the matched properties' double runs
(`bazel-bin/agent_gate.runs/<id>.result.txtpb`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from agent_gate.drive import bazel, deadline, sandbox
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.progress import Progress

GATE_TARGET = "//:agent_gate"
GATE_NAME = "agent_gate"
_NO_GATE = ("no such target '//:agent_gate'", "no such package ''")
_ERROR_LINES = 12
# Bazel's words when the forced linux-sandbox strategy cannot run an action.
_NO_SANDBOX = (
    "No usable spawn strategy",
    "linux-sandbox' was requested",
    "is an invalid value for",
)
_AGENT_GATE_WORKSPACE = re.compile(r"""workspace\(\s*name\s*=\s*["']agent_gate["']""")


def flag_prefix(workspace: Path) -> str:
    """How the gate's flags are spelled in `workspace`.

    In a consumer they are `--@agent_gate//:NAME`; inside agent_gate's own workspace
    Bazel 4.2.3 only knows `--//:NAME` (see docs/offline.md).
    """
    for name in ("WORKSPACE.bazel", "WORKSPACE"):
        path = workspace / name
        if path.is_file() and _AGENT_GATE_WORKSPACE.search(path.read_text(errors="replace")):
            return "//:"
    return bazel.FLAG_PREFIX


def bazel_binary() -> str:
    """The real bazel binary (bazel.find_bazel), or CliError saying how to install it."""
    try:
        return bazel.find_bazel()
    except bazel.BazelNotFoundError as error:
        if os.environ.get(bazel.BAZEL_ENV) or shutil.which("bazel"):
            raise CliError(f"{error}; nothing was scored") from None
        raise CliError(
            f"bazel is not on PATH (PATH={os.environ.get('PATH', '')}): run tools/bootstrap of "
            "agent_gate, which installs Debian's Bazel 4.2.3 (apt package bazel-bootstrap), or "
            "put a bazel binary on PATH; nothing was scored"
        ) from None


# Workspaces whose server was checked for a working sandbox in this process.
_SANDBOX_READY: set[str] = set()


def ensure_sandbox(workspace: Path) -> None:
    """Once per workspace and command: the output base can be hidden, linux-sandbox runs.

    Without them no build is started (fail closed, saying why); see agent_gate.drive.sandbox.
    """
    key = str(Path(workspace).absolute())
    if key in _SANDBOX_READY:
        return
    binary = bazel_binary()
    install_base, output_base = bazel.server_info(binary, Path(workspace))
    layout = [("scoring workspace", Path(workspace))]
    if output_base is not None:  # else the build fails closed on its own tmpfs flag
        layout.append(("Bazel output base", output_base))
    sandbox.check_layout(layout)
    sandbox.probe(install_base, binary)
    _SANDBOX_READY.add(key)


def explain_failure(log: str, workspace: str, what: str, code: int) -> str:
    """A message a person can act on, from bazel's console output."""
    if any(marker in log for marker in _NO_GATE):
        return (
            f"{workspace} has no {GATE_TARGET} target (bazel: "
            f"{_first_error(log) or 'no such target'}).\nDeclare the gate in the workspace's "
            'root BUILD.bazel: agent_gate(name = "agent_gate", properties = [...], '
            'ledger = "ledger.txtpb"), loaded from @agent_gate//rules:defs.bzl (docs/rules.md)'
        )
    if any(marker in log for marker in _NO_SANDBOX):
        return (
            f"`bazel build {GATE_TARGET}` ({what}) in {workspace} could not run an action in "
            "the linux-sandbox (bazel: "
            f"{_first_error(log) or 'no usable spawn strategy'}); the gate never runs a "
            "patch's actions outside it, so nothing was decided (fail closed). A target that "
            "cannot be sandboxed cannot be gated: a human must review it"
        )
    errors = [line for line in log.splitlines() if line.startswith("ERROR:")][-_ERROR_LINES:]
    shown = "\n  ".join(errors) if errors else "\n  ".join(log.splitlines()[-_ERROR_LINES:])
    return (
        f"`bazel build {GATE_TARGET}` ({what}) failed in {workspace} with exit {code}; nothing "
        f"was decided (fail closed). Fix the build and retry. Bazel said:\n  {shown}"
    )


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if line.startswith("ERROR:"):
            return line[len("ERROR:") :].strip()
    return ""


def build_gate(
    workspace: Path,
    flags: Sequence[str],
    *,
    progress: Progress,
    log_path: Path,
    what: str,
    shown: str | None = None,
) -> None:
    """`bazel build //:agent_gate FLAGS` in `workspace`; CliError explaining any failure.

    `shown` names the workspace for people (the user's checkout and revision, not the
    scoring worktree's path).
    """
    started = time.monotonic()
    code = build_targets(
        workspace, [GATE_TARGET], flags, progress=progress, log_path=log_path, what=what
    )
    if code != 0:
        text = log_path.read_text(encoding="utf-8", errors="replace")
        where = shown or str(workspace)
        raise CliError(explain_failure(text, where, what, code) + f"\nFull log: {log_path}")
    progress.step(f"bazel build {GATE_TARGET} ({what}) done in {time.monotonic() - started:.1f}s")


def build_targets(
    workspace: Path,
    targets: Sequence[str],
    flags: Sequence[str],
    *,
    progress: Progress,
    log_path: Path,
    what: str,
) -> int:
    """`bazel build FLAGS -- TARGETS`, every action sandboxed; Bazel's exit code.

    Its console output goes to `log_path`; past the CLI's deadline the build is
    cancelled and DeadlineError raised.
    """
    ensure_sandbox(workspace)
    binary = bazel_binary()
    command = [
        binary,
        "build",
        "--color=no",
        "--curses=no",
        *sandbox.flags(),
        *flags,
        "--",
        *targets,
    ]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    progress.reset_runs()
    process = subprocess.Popen(
        command,
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=bazel.bazel_env(),
        start_new_session=True,  # stopped by cancel() alone, never by a stray signal
    )
    reader = threading.Thread(target=_copy, args=(process, log_path, progress), daemon=True)
    reader.start()
    try:
        code = process.wait(timeout=deadline.remaining())
    except subprocess.TimeoutExpired:
        bazel.cancel(process)
        bazel.stop_server(binary, workspace)
        raise deadline.error(f"bazel build {' '.join(targets[:3])} ({what})") from None
    finally:
        bazel.cancel(process)  # interrupted: no build may outlive the CLI
    reader.join()
    return code


def _copy(process: subprocess.Popen[bytes], log_path: Path, progress: Progress) -> None:
    """Bazel's console output into the log, each line to the progress lines."""
    assert process.stdout is not None
    with log_path.open("wb") as log, process.stdout:
        for raw in process.stdout:
            log.write(raw)
            progress.bazel_line(raw.decode("utf-8", "replace").rstrip("\r\n"))


def bazel_bin(workspace: Path) -> Path:
    """The workspace's bazel-bin (its convenience symlink, made by the build)."""
    link = workspace / "bazel-bin"
    if not link.is_dir():
        raise CliError(
            f"{link} is missing after a successful build; do not pass --symlink_prefix in "
            "the workspace's .bazelrc for agent-gate"
        )
    return link
