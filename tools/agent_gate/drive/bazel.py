"""Drives `bazel test` of an `agent_gate` target in a workspace and reads its report.

The gate's inputs travel as the rule set's build settings
(`--@agent_gate//:changed_paths`, `run_id`, `commit_counts`, `override_by`,
`override_ignore`). A long changed-path list does not fit in one command-line
argument (Linux caps a single argv string at 128 KiB), so past a threshold the
flags go into a temporary rc file passed as `bazel --bazelrc=<file> test ...`;
that file first imports the rc file `--bazelrc` would otherwise have replaced
(`~/.bazelrc`, or the caller's own `--bazelrc`), so nothing the user configured
is lost. The workspace's own `.bazelrc` is read either way. Every special byte
of an rc word is backslash-escaped (Bazel's rc tokenizer honours no quotes), and
`changed_paths_sha256` carries the digest of the exact list, which the report
must echo. The binary run is the real Bazel, never a launcher script that would
exec a workspace's `tools/bazel` (`find_bazel`).

The decision comes from the JSON report the gate test writes to its undeclared
outputs (`bazel-testlogs/<target>/test.outputs/outputs.zip`), never from bazel's
console output, which is streamed line by line to a progress callback for
humans. When there is no trustworthy report (a build failure, a crash, a
timeout, a report left over from another run) `GateRun.report` is None and
callers fail closed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import json_format

from agent_gate.core import bazel_config, pathdigest
from agent_gate.core.locality import normalize_path
from agent_gate.core.quorum import Override
from agent_gate.drive import deadline
from agent_gate.formats.report import JSON_NAME
from proto import agent_gate_pb2

Progress = Callable[[str], None]

DEFAULT_TARGET = "//:agent_gate"
# The Bazel binary to run, when set: used as given (it is the user's, not the patch's).
BAZEL_ENV = "AGENT_GATE_BAZEL"
FLAG_PREFIX = "@agent_gate//:"
# Above this many bytes of gate flags, they go into an rc file instead of argv.
ARGV_FLAG_BYTES = 64 * 1024
# bazel test's exit codes after which the gate test ran: passed (0) or failed (3).
EXIT_TESTS_PASSED = 0
EXIT_TESTS_FAILED = 3
_GATE_RAN = (EXIT_TESTS_PASSED, EXIT_TESTS_FAILED)
_UI_FLAGS = ("--color=no", "--curses=no")
_WORKSPACE_FILES = ("WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel")
_LABEL = re.compile(r"^(?:@@?)?//([A-Za-z0-9_./+-]*)(?::([^:]+))?$")
# How long bazel gets to cancel the build after SIGINT before it is killed.
_CANCEL_GRACE_SECONDS = 30.0
# Past the deadline: how long the client gets after SIGINT, and `bazel shutdown` in all.
_DEADLINE_GRACE_SECONDS = 5.0
_SHUTDOWN_SECONDS = 20.0
# workspace -> output base of its server, as `server_info` found it.
_SERVERS: dict[str, Path] = {}


class BazelNotFoundError(RuntimeError):
    """No bazel binary: the message says what to install."""


class GateInputError(ValueError):
    """An input the gate cannot be run on faithfully; the caller must fail closed."""


@dataclass(frozen=True)
class GateRun:
    """One `bazel test` of a gate target and what it left behind."""

    command: tuple[str, ...]
    exit_code: int  # bazel's: 0 = the gate test passed (promote), 3 = it failed
    report: agent_gate_pb2.GateReport | None  # None: no trustworthy report, fail closed
    run_id: str
    log_path: Path  # bazel's console output of this invocation
    report_json_path: Path | None  # the extracted agent_gate_report.json
    outputs_dir: Path | None  # every undeclared output of the gate test, extracted
    test_log_path: Path | None  # the gate test's own log (bazel-testlogs/.../test.log)
    rc_path: Path | None  # the rc file carrying the gate flags, when they did not fit argv
    duration_seconds: float
    timed_out: bool = False
    problem: str | None = None  # why report is None, for a person to act on

    @property
    def decision(self) -> str | None:
        return self.report.decision if self.report is not None else None


def new_run_id(prefix: str = "run") -> str:
    """A run id no earlier run used, so both runs of every matched property really run."""
    return f"{prefix}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:12]}"


def default_work_dir(run_id: str) -> Path:
    """`$TMPDIR/agent_gate-runs/<run id>`: one place for every run's log and report."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", run_id)[:120].lstrip(".") or "no-run-id"
    return Path(tempfile.gettempdir()) / "agent_gate-runs" / name


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


def testlogs_subdir(target: str) -> str:
    """`//pkg:name` -> `pkg/name`, where bazel-testlogs keeps that test's outputs."""
    match = _LABEL.match(target)
    if match is None:
        raise GateInputError(
            f"gate target {target!r} is not a label of this workspace such as //:agent_gate"
        )
    package, name = match.group(1), match.group(2)
    if name is None:
        name = package.rsplit("/", 1)[-1]
    if not name:
        raise GateInputError(f"gate target {target!r} names no target")
    return f"{package}/{name}" if package else name


def _check_value(what: str, value: str) -> None:
    for char, name in (("\n", "a newline"), ("\r", "a carriage return"), ("\0", "a NUL byte")):
        if char in value:
            raise GateInputError(f"{what} {value!r} contains {name}, which a flag cannot carry")


def _list_flag_item(what: str, item: str) -> str:
    """One item of a comma-separated flag, refused when the gate would read it differently."""
    _check_value(what, item)
    if not item:
        raise GateInputError(f"{what} is empty")
    if "," in item:
        raise GateInputError(
            f"{what} {item!r} contains ',', the separator of the flag; the gate would read "
            "it as several paths, so it cannot be scored automatically"
        )
    if item != item.strip():
        raise GateInputError(
            f"{what} {item!r} begins or ends with whitespace, which the gate strips; it "
            "cannot be scored automatically"
        )
    return item


def encode_path(path: str) -> str:
    """A changed path as one item of `changed_paths`: `%` and `,` percent-encoded.

    The rule decodes `%2C` and `%25` and keeps every other byte, so any file name
    git can produce (commas and edge spaces included) reaches the gate unchanged.
    """
    _check_value("changed path", path)
    if not path:
        raise GateInputError("changed path is empty")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise GateInputError(
            f"changed path {shown!r} is not UTF-8; Bazel's flags and the gate's config (JSON) "
            "cannot carry its bytes faithfully"
        ) from None
    return path.replace("%", "%25").replace(",", "%2C")


def gate_flags(
    *,
    changed_paths: Sequence[str],
    run_id: str,
    commit_counts: Mapping[str, int] | None = None,
    override: Override | None = None,
    flag_prefix: str = FLAG_PREFIX,
    only_properties: Sequence[str] = (),
) -> list[str]:
    """The build-setting flags that hand one candidate patch to the gate.

    `only_properties`: run just these of the matched properties (freeze, admit).
    """
    paths = [encode_path(path) for path in changed_paths]
    _check_value("run id", run_id)
    counts: list[str] = []
    for commit, count in (commit_counts or {}).items():
        _list_flag_item("commit", commit)
        if "=" in commit or any(char.isspace() for char in commit):
            raise GateInputError(f"commit {commit!r} is not a commit id")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise GateInputError(f"commit count of {commit} must be an integer >= 0, not {count!r}")
        counts.append(f"{commit}={count}")
    flags = [
        f"--{flag_prefix}changed_paths={','.join(paths)}",
        f"--{flag_prefix}changed_paths_sha256={pathdigest.changed_paths_digest(changed_paths)}",
        f"--{flag_prefix}run_id={run_id}",
        f"--{flag_prefix}commit_counts={','.join(counts)}",
    ]
    by, ignored = "", ""
    if override is not None:
        _check_value("override author", override.by)
        by = override.by
        ignored = ",".join(_list_flag_item("overridden ledger id", i) for i in override.ignored_ids)
    flags += [f"--{flag_prefix}override_by={by}", f"--{flag_prefix}override_ignore={ignored}"]
    if only_properties:
        only = ",".join(_list_flag_item("property id", item) for item in only_properties)
        flags.append(f"--{flag_prefix}only_properties={only}")
    return flags


def fits_command_line(flags: Sequence[str]) -> bool:
    """Whether flags are short enough for argv; longer ones go through an rc file."""
    return sum(len(flag.encode("utf-8", "surrogateescape")) for flag in flags) <= ARGV_FLAG_BYTES


# Bytes an rc line keeps literally without a backslash before them.
_RC_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-=%,:@+")


def _rc_quote(token: str) -> str:
    """One option as one word of a bazelrc line, whatever bytes it holds.

    Bazel's rc tokenizer (the client's blaze_util::Tokenize) takes a backslash as an
    escape everywhere, inside single quotes too, and `#` as a comment. So no quotes:
    every ASCII byte outside a safe set gets a backslash, which keeps it literally.
    Bytes above ASCII (UTF-8, or undecodable bytes kept as surrogates) are never
    special to it. A newline or NUL cannot be carried (`_check_value` refuses them).
    """
    _check_value("rc file option", token)
    return "".join(char if char in _RC_PLAIN or ord(char) > 0x7F else "\\" + char for char in token)


def _split_bazelrc(startup_flags: Sequence[str]) -> tuple[list[str], str | None]:
    """Take a caller's `--bazelrc=X` out of the startup flags: our rc file imports it."""
    kept: list[str] = []
    user_rc: str | None = None
    flags = list(startup_flags)
    index = 0
    while index < len(flags):
        flag = flags[index]
        if flag.startswith("--bazelrc="):
            user_rc = flag.split("=", 1)[1]
        elif flag == "--bazelrc" and index + 1 < len(flags):
            user_rc = flags[index + 1]
            index += 1
        else:
            kept.append(flag)
        index += 1
    return kept, user_rc


def _rc_line(command: str, word: str) -> str:
    """One rc line; the closing `#` (an empty comment) keeps the word's last byte.

    The rc reader joins a line ending in a backslash with the next one, escaped or
    not, and strips trailing whitespace (an escaped space or form feed included)
    before it tokenizes: the comment ends every line with neither.
    """
    return f"{command} {word} #"


def write_rc_file(path: Path, flags: Sequence[str], user_rc: str | None) -> None:
    """An rc file with the gate flags under `test`, importing the rc it displaces."""
    lines = ["# agent_gate: the flags of one gate run (too long for the command line)."]
    if user_rc is not None:
        if user_rc != "/dev/null":
            lines.append(_rc_line("import", _rc_quote(user_rc)))
    else:
        home = os.environ.get("HOME")
        if home:
            lines.append(_rc_line("try-import", _rc_quote(str(Path(home) / ".bazelrc"))))
    lines.extend(_rc_line("test", _rc_quote(flag)) for flag in flags)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")


def _stream(process: subprocess.Popen[bytes], log_path: Path, progress: Progress | None) -> None:
    """Copy bazel's console output to the log, and each line to the progress callback."""
    assert process.stdout is not None
    with log_path.open("wb") as log:
        for raw in process.stdout:
            log.write(raw)
            log.flush()
            if progress is not None:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                for part in line.split("\r"):
                    if part.strip():
                        progress(part)


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
            [bazel, *startup, "info", *_UI_FLAGS, "install_base", "output_base"],
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


def _bazel_info(
    bazel: str, workspace: Path, startup: Sequence[str], key: str, flags: Sequence[str] = ()
) -> Path | None:
    try:
        done = subprocess.run(
            [bazel, *startup, "info", *_UI_FLAGS, *flags, key],
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


def _testlogs_root(
    bazel: str, workspace: Path, startup: Sequence[str], extra_flags: Sequence[str]
) -> Path | None:
    convenience = workspace / "bazel-testlogs"
    if convenience.is_dir() and not any("symlink" in flag for flag in extra_flags):
        return convenience
    return _bazel_info(bazel, workspace, startup, "bazel-testlogs", extra_flags)


def _extract_outputs(test_dir: Path, outputs_dir: Path) -> Path | None:
    """Extract the test's undeclared outputs; return the JSON report's path if there is one."""
    if outputs_dir.exists():
        shutil.rmtree(outputs_dir)  # nothing of an earlier run may pass for this one's
    archive = test_dir / "test.outputs" / "outputs.zip"
    loose = test_dir / "test.outputs" / JSON_NAME  # --nozip_undeclared_test_outputs
    if archive.is_file():
        with zipfile.ZipFile(archive) as outputs:
            outputs.extractall(outputs_dir)  # names with '..' or '/' prefixes are sanitized
    elif loose.is_file():
        shutil.copytree(test_dir / "test.outputs", outputs_dir, dirs_exist_ok=True)
    report = outputs_dir / JSON_NAME
    return report if report.is_file() else None


def _shown(path: str) -> str:
    """A changed path as the report lists it (normalized when it can be)."""
    try:
        return normalize_path(path)
    except ValueError:
        return path


def _trusted_report(
    path: Path, run_id: str, changed_paths: Sequence[str]
) -> tuple[agent_gate_pb2.GateReport | None, str | None]:
    """The report at `path` if it is this run's, else None and why not."""
    try:
        report = json_format.Parse(
            path.read_text(encoding="utf-8"),
            agent_gate_pb2.GateReport(),
            ignore_unknown_fields=True,
        )
    except (OSError, UnicodeDecodeError, json_format.ParseError) as error:
        return None, f"the gate report {path} is unreadable ({error}); not a promote"
    if not report.decision:
        return None, f"the gate report {path} holds no decision; not a promote"
    sent = pathdigest.changed_paths_digest(changed_paths)
    if report.changed_paths_sha256 != sent:
        return None, (
            f"the gate report {path} saw other changed paths than the CLI sent (digest "
            f"{report.changed_paths_sha256[:16] or 'missing'}..., sent {sent[:16]}...): a path "
            "was lost or shifted on the way to the gate, or no evaluator of this rule set "
            "wrote the report; a configuration error, not a promote"
        )
    if report.run_id != run_id or report.changed_path_count != len(changed_paths):
        return None, (
            f"the gate report {path} is from another run (run id {report.run_id!r}, "
            f"{report.changed_path_count} changed paths; expected {run_id!r}, "
            f"{len(changed_paths)}): the gate test did not finish this time; not a promote"
        )
    return report, None


def run_gate(
    workspace: Path,
    target: str = DEFAULT_TARGET,
    *,
    changed_paths: Sequence[str],
    run_id: str,
    commit_counts: Mapping[str, int] | None = None,
    override: Override | None = None,
    bazel: str = "bazel",
    extra_flags: Sequence[str] = (),
    startup_flags: Sequence[str] = (),
    output_base: Path | None = None,
    progress: Progress | None = None,
    work_dir: Path | None = None,
    timeout_seconds: float | None = None,
    use_rc_file: bool | None = None,
    flag_prefix: str = FLAG_PREFIX,
    env: Mapping[str, str] | None = None,
) -> GateRun:
    """Run `bazel test TARGET` with the gate flags in `workspace` and read the report.

    `work_dir` receives bazel's console log, the rc file and the extracted
    outputs (default: `default_work_dir(run_id)`, left for the caller to read).
    `use_rc_file` forces the flags into an rc file (True) or onto the command
    line (False); None decides by their size. Raises BazelNotFoundError without
    a bazel binary, and GateInputError for inputs the flags cannot carry or a diff
    touching what configures Bazel itself (`core/bazel_config.py`).
    """
    workspace = Path(workspace).absolute()
    if not any((workspace / name).is_file() for name in _WORKSPACE_FILES):
        raise GateInputError(f"{workspace} is not a Bazel workspace (no WORKSPACE or MODULE.bazel)")
    binary = find_bazel(bazel)
    subdir = testlogs_subdir(target)
    changed = list(changed_paths)
    control = bazel_config.bazel_config_paths(changed)
    if control:
        raise GateInputError(
            f"the diff touches {', '.join(control[:5])}, which decides how Bazel itself runs "
            "(its launcher, rc files, version or repositories): a gate run in that tree could "
            "be replaced or have its verdict rewritten, so it is not run; a human must review "
            "the patch (not a promote)"
        )
    flags = gate_flags(
        changed_paths=changed,
        run_id=run_id,
        commit_counts=commit_counts,
        override=override,
        flag_prefix=flag_prefix,
    )
    work = Path(work_dir) if work_dir is not None else default_work_dir(run_id)
    work.mkdir(parents=True, exist_ok=True)
    log_path = work / "bazel.log"

    startup, user_rc = _split_bazelrc(startup_flags)
    if output_base is not None:
        startup.append(f"--output_base={Path(output_base).absolute()}")
    if use_rc_file is None:
        use_rc_file = not fits_command_line(flags)
    rc_path: Path | None = None
    if use_rc_file:
        rc_path = work / "agent_gate.bazelrc"
        write_rc_file(rc_path, flags, user_rc)
        startup.append(f"--bazelrc={rc_path}")
        command = [binary, *startup, "test", *_UI_FLAGS]
    else:
        if user_rc is not None:
            startup.append(f"--bazelrc={user_rc}")
        command = [binary, *startup, "test", *_UI_FLAGS, *flags]
    command += [*extra_flags, target]

    started = time.monotonic()
    try:
        process = subprocess.Popen(
            command,
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=bazel_env(env),
            start_new_session=True,  # only cancel() stops it, and the deadline's stop_server
        )
    except FileNotFoundError as error:
        raise BazelNotFoundError(
            f"cannot run {binary} ({error}): run tools/bootstrap to install Bazel"
        ) from error
    reader = threading.Thread(target=_stream, args=(process, log_path, progress), daemon=True)
    reader.start()
    try:
        exit_code, timed_out = _wait(process, timeout_seconds)
        reader.join(timeout=_SHUTDOWN_SECONDS if timed_out else None)
    finally:
        cancel(process)  # interrupted while waiting: do not leave a build running
        if process.stdout is not None:
            process.stdout.close()
    duration = round(time.monotonic() - started, 3)
    if timed_out and deadline.passed():
        stop_server(binary, workspace, startup)
        raise deadline.error(f"bazel test {target}")

    def finish(
        report: agent_gate_pb2.GateReport | None = None,
        report_json: Path | None = None,
        outputs_dir: Path | None = None,
        test_log: Path | None = None,
        problem: str | None = None,
    ) -> GateRun:
        return GateRun(
            command=tuple(command),
            exit_code=exit_code,
            report=report,
            run_id=run_id,
            log_path=log_path,
            report_json_path=report_json,
            outputs_dir=outputs_dir,
            test_log_path=test_log,
            rc_path=rc_path,
            duration_seconds=duration,
            timed_out=timed_out,
            problem=problem,
        )

    if timed_out:
        return finish(
            problem=f"bazel test {target} ran past {timeout_seconds}s and was cancelled; "
            "a gate that did not finish is never a promote"
        )
    if exit_code not in _GATE_RAN:
        return finish(
            problem=f"bazel test {target} exited {exit_code} before the gate could decide "
            f"(build failure or crash); see {log_path}"
        )
    testlogs = _testlogs_root(binary, workspace, startup, extra_flags)
    if testlogs is None:
        return finish(problem=f"cannot find bazel-testlogs of {workspace}; not a promote")
    test_dir = testlogs / subdir
    test_log = test_dir / "test.log"
    outputs_dir = work / "outputs"
    try:
        report_json = _extract_outputs(test_dir, outputs_dir)
    except (OSError, zipfile.BadZipFile) as error:
        return finish(problem=f"cannot read the outputs of {target} ({error}); not a promote")
    test_log_path = test_log if test_log.is_file() else None
    if report_json is None:
        return finish(
            outputs_dir=outputs_dir,
            test_log=test_log_path,
            problem=f"{target} wrote no {JSON_NAME} (see {test_log}); not a promote",
        )
    report, problem = _trusted_report(report_json, run_id, changed)
    return finish(report, report_json, outputs_dir, test_log_path, problem)


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
