"""Runs the real Bazel binary: the one place the CLI starts a Bazel client.

* Which binary: AGENT_GATE_BAZEL as given, else the `bazel` on PATH, but never a
  launcher script there, which would exec a workspace's `tools/bazel` (a patch
  controls it): the real binary beside it runs instead (`find_bazel`).
* Its environment (`bazel_env`) and console flags (`UI_FLAGS`).
* One command streamed: its console output copied to a log and, line by line, to
  a callback for people (never parsed for a decision), under the CLI's deadline
  and an optional timeout, and cancelled (SIGINT, then SIGKILL) when either
  passes (`run_streamed`).
* The server: `bazel info`, `bazel shutdown`, and killing a server that does
  not shut down (`server_info`, `stop_server`, `shutdown`).
* `bazel build` with every action in linux-sandbox (`build_targets`): the
  sandbox flags of `sandbox.py`, checked once per workspace (`ensure_sandbox`).
* Where the build left things (`bazel_bin`, `testlogs_root`) and the first
  error of a console log (`first_error`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agent_gate.drive import deadline, sandbox
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.progress import Progress

# What a streamed command's console lines go to.
OnLine = Callable[[str], None]

# The Bazel binary to run, when set: used as given (it is the user's, not the patch's).
BAZEL_ENV = "AGENT_GATE_BAZEL"
UI_FLAGS = ("--color=no", "--curses=no")
# How long bazel gets to cancel the build after SIGINT before it is killed.
_CANCEL_GRACE_SECONDS = 30.0
# Past the deadline: how long the client gets after SIGINT, and `bazel shutdown` in all.
_DEADLINE_GRACE_SECONDS = 5.0
_SHUTDOWN_SECONDS = 20.0
# workspace -> output base of its server, as `server_info` found it.
_SERVERS: dict[str, Path] = {}
# Workspaces whose server was checked for a working sandbox in this process.
_SANDBOX_READY: set[str] = set()


class BazelNotFoundError(RuntimeError):
    """No bazel binary: the message says what to install."""


def find_bazel(bazel: str = "bazel") -> str:
    """The real bazel binary to run, or BazelNotFoundError naming what to install.

    The default `bazel` is AGENT_GATE_BAZEL when set (trusted as given), else the
    `bazel` on PATH. A launcher script there (Debian's /usr/bin/bazel, a bazelisk
    stand-in) would exec the workspace's `tools/bazel`, which a patch controls, so
    the real binary beside it is run instead (`real_binary`).
    """
    explicit = os.environ.get(BAZEL_ENV, "").strip() if bazel == "bazel" else ""
    found = shutil.which(explicit or bazel)
    if found is None:
        where = f"{BAZEL_ENV}={explicit!r}" if explicit else f"PATH={os.environ.get('PATH', '')}"
        raise BazelNotFoundError(
            f"bazel binary {explicit or bazel!r} not found ({where}): run "
            "tools/bootstrap, which installs Debian's Bazel 4.2.3 (apt package "
            "bazel-bootstrap) and the offline rule sets, or pass the path of a bazel binary"
        )
    return found if explicit else real_binary(found)


def _is_script(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(2) == b"#!"
    except OSError:
        return False


def _version_key(path: Path) -> tuple[int, ...]:
    digits = re.findall(r"\d+", path.name)
    return tuple(int(part) for part in digits)


def real_binary(found: str) -> str:
    """`found` itself if it is a binary; for a launcher script, the real Bazel beside it.

    The launcher picks `bazel-real` or the highest `bazel-<version>` in its own
    directory; so does this, without reading the workspace (`.bazelversion`).
    """
    path = Path(found)
    if not _is_script(path):
        return found
    folder = path.resolve().parent
    beside = [folder / "bazel-real"] if (folder / "bazel-real").is_file() else []
    beside += sorted(
        (p for p in folder.glob("bazel-[0-9]*") if p.is_file()), key=_version_key, reverse=True
    )
    for candidate in beside:
        if os.access(candidate, os.X_OK) and not _is_script(candidate):
            return str(candidate)
    raise BazelNotFoundError(
        f"{found} is a launcher script (it would run a workspace's tools/bazel, which a patch "
        f"controls) and no real Bazel binary is beside it in {folder}; set {BAZEL_ENV} to the "
        "Bazel binary itself (e.g. /usr/bin/bazel-4)"
    )


def bazel_binary() -> str:
    """The real bazel binary (find_bazel), or CliError saying how to install it."""
    try:
        return find_bazel()
    except BazelNotFoundError as error:
        if os.environ.get(BAZEL_ENV) or shutil.which("bazel"):
            raise CliError(f"{error}; nothing was scored") from None
        raise CliError(
            f"bazel is not on PATH (PATH={os.environ.get('PATH', '')}): run tools/bootstrap of "
            "agent_gate, which installs Debian's Bazel 4.2.3 (apt package bazel-bootstrap), or "
            "put a bazel binary on PATH; nothing was scored"
        ) from None


def bazel_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every bazel the CLI runs.

    Bazelisk must not run tools/bazel. And no TMPDIR: linux-sandbox binds the
    client's TMPDIR into every sandbox, which fails for every action once the
    sandbox's own tmpfs hides a TMPDIR below /tmp (sandbox.py).
    """
    env = dict(os.environ if base is None else base)
    env["BAZELISK_SKIP_WRAPPER"] = "1"
    env.pop("TMPDIR", None)
    return env


def _stream(process: subprocess.Popen[bytes], log_path: Path, on_line: OnLine) -> None:
    """Copy bazel's console output to the log, and each line to `on_line`."""
    assert process.stdout is not None
    with log_path.open("wb") as log:
        for raw in process.stdout:
            log.write(raw)
            log.flush()
            on_line(raw.decode("utf-8", errors="replace").rstrip("\r\n"))


def _wait(process: subprocess.Popen[bytes], timeout: float | None) -> tuple[int, bool]:
    """Bazel's exit code, and whether it had to be cancelled (timeout or the deadline)."""
    left = deadline.remaining()
    if left is not None and (timeout is None or left < timeout):
        timeout = left
    try:
        return process.wait(timeout=timeout), False
    except subprocess.TimeoutExpired:
        return cancel(process), True


def cancel(process: subprocess.Popen[bytes]) -> int:
    """Stop a bazel client: SIGINT (it cancels the build on the server), then SIGKILL."""
    if process.poll() is not None:
        return process.returncode
    # SIGINT makes the bazel client cancel the build on the server, as Ctrl-C does.
    process.send_signal(signal.SIGINT)
    grace = _CANCEL_GRACE_SECONDS if not deadline.passed() else _DEADLINE_GRACE_SECONDS
    try:
        return process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def run_streamed(
    command: Sequence[str],
    workspace: Path,
    log_path: Path,
    on_line: OnLine,
    *,
    what: str,
    startup: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> tuple[int, bool]:
    """Run one Bazel command (`command[0]` the binary) in `workspace`, its output streamed.

    Returns Bazel's exit code and whether it ran past `timeout` and was cancelled.
    Past the CLI's deadline the client is cancelled, the server stopped and
    DeadlineError raised (naming `what`). BazelNotFoundError when the binary
    cannot be started. No client outlives this call.
    """
    try:
        process = subprocess.Popen(
            list(command),
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=bazel_env(env),
            start_new_session=True,  # only cancel() stops it, and the deadline's stop_server
        )
    except FileNotFoundError as error:
        raise BazelNotFoundError(
            f"cannot run {command[0]} ({error}): run tools/bootstrap to install Bazel"
        ) from error
    reader = threading.Thread(target=_stream, args=(process, log_path, on_line), daemon=True)
    reader.start()
    try:
        exit_code, timed_out = _wait(process, timeout)
        reader.join(timeout=_SHUTDOWN_SECONDS if timed_out else None)
    finally:
        cancel(process)  # interrupted while waiting: do not leave a build running
        if process.stdout is not None:
            process.stdout.close()
    if timed_out and deadline.passed():
        stop_server(command[0], workspace, startup)
        raise deadline.error(what)
    return exit_code, timed_out


def server_info(
    bazel: str, workspace: Path, startup: Sequence[str] = ()
) -> tuple[Path | None, Path | None]:
    """(install base, output base) of the workspace's server, and remember the latter.

    The output base is where `stop_server` finds the server's pid when `bazel
    shutdown` itself does not return.
    """
    left = deadline.remaining()
    try:
        done = subprocess.run(
            [bazel, *startup, "info", *UI_FLAGS, "install_base", "output_base"],
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            env=bazel_env(),
            timeout=left,
            check=False,
        )
    except subprocess.TimeoutExpired:
        stop_server(bazel, workspace, startup)
        raise deadline.error("`bazel info`") from None
    values: dict[str, Path] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(": ")
        if value.strip():
            values[key.strip()] = Path(value.strip())
    output_base = values.get("output_base")
    if output_base is not None:
        _SERVERS[str(Path(workspace).absolute())] = output_base
    return values.get("install_base"), output_base


def _server_pid(output_base: Path) -> int | None:
    try:
        text = (output_base / "server" / "server.pid.txt").read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _servers_of(workspace: Path, output_base: Path | None) -> list[int]:
    """Live Bazel servers of `workspace` (its server names it in --workspace_directory).

    Also the one of `output_base`'s pid file: pid files outlive servers, so a pid
    counts only while its command line still names that output base.
    """
    wanted = f"--workspace_directory={Path(workspace).absolute()}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and wanted in _cmdline(int(entry.name)):
            found.append(int(entry.name))
    if output_base is not None:
        pid = _server_pid(output_base)
        if pid is not None and f"--output_base={output_base}".encode() in _cmdline(pid):
            found.append(pid)
    return sorted(set(found))


def stop_server(bazel: str, workspace: Path, startup: Sequence[str] = ()) -> None:
    """Stop the workspace's server: `bazel shutdown`, else SIGKILL (pid file, /proc)."""
    # On a timeout subprocess.run kills the client; the server is killed below.
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            [bazel, *startup, "shutdown"],
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=bazel_env(),
            timeout=_SHUTDOWN_SECONDS,
            check=False,
        )
    output_base = _SERVERS.get(str(Path(workspace).absolute()))
    for pid in _servers_of(workspace, output_base):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def shutdown(
    workspace: Path,
    *,
    bazel: str = "bazel",
    startup_flags: Sequence[str] = (),
    output_base: Path | None = None,
) -> int:
    """Stop the bazel server of `workspace` (and output base); return bazel's exit code."""
    startup = list(startup_flags)
    if output_base is not None:
        startup.append(f"--output_base={Path(output_base).absolute()}")
    done = subprocess.run(
        [find_bazel(bazel), *startup, "shutdown"],
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=bazel_env(),
        check=False,
    )
    return done.returncode


def info_path(
    bazel: str, workspace: Path, startup: Sequence[str], key: str, flags: Sequence[str] = ()
) -> Path | None:
    """`bazel info KEY` as a path, or None when Bazel gives none."""
    try:
        done = subprocess.run(
            [bazel, *startup, "info", *UI_FLAGS, *flags, key],
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            env=bazel_env(),
            timeout=deadline.remaining(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        stop_server(bazel, workspace, startup)
        raise deadline.error("`bazel info`") from None
    value = done.stdout.strip()
    return Path(value) if done.returncode == 0 and value else None


def testlogs_root(
    bazel: str, workspace: Path, startup: Sequence[str], extra_flags: Sequence[str]
) -> Path | None:
    """The workspace's bazel-testlogs: its convenience symlink, else `bazel info`.

    Only a symlink is Bazel's: a directory of that name came with the patch, and
    what it holds (a report, a log) is the patch's word, not Bazel's.
    """
    convenience = workspace / "bazel-testlogs"
    if _bazels_link(convenience) and not any("symlink" in flag for flag in extra_flags):
        return convenience
    return info_path(bazel, workspace, startup, "bazel-testlogs", extra_flags)


def ensure_sandbox(workspace: Path) -> None:
    """Once per workspace and command: the output base can be hidden, linux-sandbox runs.

    Without them no build is started (fail closed, saying why); see agent_gate.drive.sandbox.
    """
    key = str(Path(workspace).absolute())
    if key in _SANDBOX_READY:
        return
    binary = bazel_binary()
    install_base, output_base = server_info(binary, Path(workspace))
    layout = [("scoring workspace", Path(workspace))]
    if output_base is not None:  # else the build fails closed on its own tmpfs flag
        layout.append(("Bazel output base", output_base))
    sandbox.check_layout(layout)
    sandbox.probe(install_base, binary)
    _SANDBOX_READY.add(key)


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
        *UI_FLAGS,
        *sandbox.flags(),
        *flags,
        "--",
        *targets,
    ]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    progress.reset_runs()
    code, _ = run_streamed(
        command,
        workspace,
        log_path,
        progress.bazel_line,
        what=f"bazel build {' '.join(targets[:3])} ({what})",
    )
    return code


def bazel_bin(workspace: Path) -> Path:
    """The workspace's bazel-bin (its convenience symlink, made by the build)."""
    link = workspace / "bazel-bin"
    if not _bazels_link(link):
        raise CliError(
            f"{link} is not Bazel's convenience symlink after a successful build (missing, "
            "or a file or directory the workspace holds); do not pass --symlink_prefix in "
            "the workspace's .bazelrc for agent-gate, and do not commit bazel-* paths"
        )
    return link


def _bazels_link(path: Path) -> bool:
    """Whether `path` is a convenience symlink Bazel made: a link to a directory."""
    return path.is_symlink() and path.is_dir()


def first_error(log: str) -> str:
    """The text of the first `ERROR:` line of a console log, or ""."""
    for line in log.splitlines():
        if line.startswith("ERROR:"):
            return line[len("ERROR:") :].strip()
    return ""
