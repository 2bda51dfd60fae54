"""Runs one property twice, the way `bazel test --runs_per_test=2` would, and records it.

Both runs use the same command, the same runfiles and the same fixtures; each runs
in namespaces of its own (`isolation`): a private /tmp, /dev/shm, TEST_TMPDIR and
HOME, every other path read-only, no writable path shared with the other run, and
nothing left once it ended. What a seal cannot pin (docs/threat-model.md; clock zone,
locale, hash seed, build time) is pinned here. The result is data: a failing,
hanging or crashing property never makes the runner itself fail.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_gate.actions import isolation
from agent_gate.core import outcome

# 1980-01-01, the earliest time a zip file can hold: any fixed value works.
SOURCE_DATE_EPOCH = "315532800"

# What a run may inherit from the action's own environment.
_INHERITED = ("PATH", "LD_LIBRARY_PATH", "SYSTEMROOT")


@dataclass(frozen=True)
class RunSpec:
    property_id: str
    label: str
    executable: Path  # absolute
    workspace: str  # TEST_WORKSPACE
    timeout_seconds: float
    run_id: str = ""
    repo_root: Path = Path(".")  # where fixture paths are relative to
    fixture_paths: tuple[str | bytes, ...] = ()  # bytes: as the file system holds them
    # The wrapped test's `args` and `env`, expanded as `bazel test` passes them.
    test_args: tuple[str, ...] = ()
    test_env: tuple[tuple[str, str], ...] = ()


@dataclass
class Run:
    """One run, as the `Run` message of proto/agent_gate.proto records it."""

    run_number: int
    exit_code: int = 0  # -N when killed by signal N
    timed_out: bool = False
    duration_seconds: float = 0.0
    output_sha256: str = ""
    fixture_seal_before: str = ""
    fixture_seal_after: str = ""
    # In namespaces of its own (see `isolation`); when not, the run did not happen.
    isolated: bool = False
    isolation_error: str = ""


@dataclass(frozen=True)
class DoubleRun:
    """Both runs of a property and their classification (the `RunResult` message)."""

    spec: RunSpec
    runs: tuple[Run, Run]
    classification: str
    # Measured in the action itself: only loopback visible means its sandbox blocks the network.
    network_blocked: bool = False
    network_interfaces: tuple[str, ...] = ()


def runfiles_dir(executable: Path) -> Path:
    return executable.with_name(executable.name + ".runfiles")


def scratch_directories(scratch: Path) -> tuple[Path, ...]:
    return tuple(scratch / name for name in ("tmp", "home", "outputs", "annotations"))


def test_environment(spec: RunSpec, run_number: int, scratch: Path) -> dict[str, str]:
    """The environment Bazel's test runner gives a test, plus determinism pins.

    `scratch` is on the run's own /tmp, which only exists inside its namespace:
    the run makes `scratch_directories` there before the property starts. The
    test's own `env` comes over the pins, as `bazel test` would set it, never
    over the test protocol and the run's private directories, set last.
    """
    runfiles = runfiles_dir(spec.executable)
    tmp = scratch / "tmp"
    env = {key: os.environ[key] for key in _INHERITED if key in os.environ}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(
        {
            "HOME": str(scratch / "home"),
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH,
        }
    )
    env.update(spec.test_env)
    env.update(
        {
            "TEST_SRCDIR": str(runfiles),
            "RUNFILES_DIR": str(runfiles),
            "JAVA_RUNFILES": str(runfiles),
            "PYTHON_RUNFILES": str(runfiles),
            "TEST_WORKSPACE": spec.workspace,
            "TEST_TARGET": spec.label,
            "TEST_RUN_NUMBER": str(run_number),
            "TEST_TMPDIR": str(tmp),
            "TMPDIR": str(tmp),
            "XML_OUTPUT_FILE": str(scratch / "test.xml"),
            "TEST_UNDECLARED_OUTPUTS_DIR": str(scratch / "outputs"),
            "TEST_UNDECLARED_OUTPUTS_ANNOTATIONS_DIR": str(scratch / "annotations"),
            "TEST_PREMATURE_EXIT_FILE": str(scratch / "premature_exit"),
            "TEST_WARNINGS_OUTPUT_FILE": str(scratch / "warnings"),
            "TEST_TIMEOUT": str(int(spec.timeout_seconds)),
        }
    )
    return env


def _fixture_seal(spec: RunSpec) -> str:
    if not spec.fixture_paths:
        return ""
    # Imported here: most properties read no fixture, and every action pays its imports.
    from agent_gate.formats import seal  # noqa: PLC0415

    try:
        return seal.seal_files(spec.repo_root, spec.fixture_paths)
    except (OSError, seal.SealError) as error:
        return f"error: {error}"


_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_MAX_REAP_ROUNDS = 1000


def become_subreaper() -> bool:
    """Make orphaned descendants of a run re-parent to this process, not to init (Linux).

    A descendant that starts its own session (`setsid`, a daemon's double fork)
    leaves the run's process group, so killing the group misses it; as a child
    subreaper the runner still finds it among its own children and kills it.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _read_all(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def children_from_tasks() -> list[int] | None:
    """This process's children, from each thread's `/proc/self/task/<tid>/children`.

    One small read per thread of this process, where a scan reads a file per
    process on the machine. None when the kernel has no such files
    (CONFIG_PROC_CHILDREN off).
    """
    if not os.path.exists("/proc/thread-self/children"):
        return None
    found: list[int] = []
    for task in os.listdir("/proc/self/task"):
        try:
            found += [int(pid) for pid in _read_all(f"/proc/self/task/{task}/children").split()]
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended meanwhile; its children moved to another one
    return found


def children_from_scan() -> list[int]:
    """This process's children, by reading every `/proc/<pid>/stat` (any Linux)."""
    me = str(os.getpid()).encode()
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = _read_all(f"/proc/{entry}/stat")
        except OSError:
            continue
        fields = stat.rpartition(b")")[2].split()
        if len(fields) > 1 and fields[1] == me:
            found.append(int(entry))
    return found


def _children() -> list[int]:
    with contextlib.suppress(OSError):
        if os.readlink("/proc/self") != str(os.getpid()):
            # This /proc numbers another pid namespace than ours: its pids are not ours
            # to kill. The run's process group was killed; nothing more is safe.
            return []
    from_tasks = children_from_tasks()
    return children_from_scan() if from_tasks is None else from_tasks


def kill_orphans() -> int:
    """SIGKILL and reap every child this process still has; return how many there were.

    After a run the runner has no child of its own, so any child is a descendant
    of the run that outlived it (adopted thanks to `become_subreaper`).
    """
    killed = 0
    for _ in range(_MAX_REAP_ROUNDS):
        children = _children()
        if not children:
            break
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        killed += len(children)
    return killed


def _private_log(log_path: Path) -> int:
    """An unnamed file for a run's output, given its name only after both runs.

    A named log would be a file run 1 writes and run 2 can read.
    """
    with contextlib.suppress(OSError):
        return os.open(log_path.parent, os.O_TMPFILE | os.O_RDWR, 0o644)
    return os.dup(tempfile.TemporaryFile().fileno())


def publish_log(fd: int, log_path: Path) -> None:
    """Give a run's unnamed output file its declared name, then close it."""
    try:
        with contextlib.suppress(FileNotFoundError):
            log_path.unlink()
        try:
            os.link(f"/proc/self/fd/{fd}", log_path)
        except OSError:  # not an O_TMPFILE (or no /proc): copy it
            os.lseek(fd, 0, os.SEEK_SET)
            with log_path.open("wb") as stream:
                while chunk := os.read(fd, 1 << 20):
                    stream.write(chunk)
    finally:
        os.close(fd)


def _sha256_fd(fd: int) -> str:
    digest = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def run_once(spec: RunSpec, run_number: int, log_fd: int) -> Run:
    """One run in namespaces of its own (`isolation`); its output goes to `log_fd`."""
    run = Run(run_number=run_number)
    run.fixture_seal_before = _fixture_seal(spec)
    scratch = Path(f"/tmp/agent_gate.run{run_number}")
    env = test_environment(spec, run_number, scratch)
    cwd = runfiles_dir(spec.executable) / spec.workspace
    plan = isolation.Plan(
        executable=str(spec.executable),
        args=spec.test_args,
        env=env,
        cwd=str(cwd if cwd.is_dir() else runfiles_dir(spec.executable)),
        directories=tuple(str(path) for path in scratch_directories(scratch)),
        log_fd=log_fd,
    )
    started = time.monotonic()
    pid, pipe = isolation.start(plan)
    # A timer kills the run at its timeout while finish() blocks in waitpid. Killing
    # the chain's process group kills its PID 1, and with it the whole namespace.
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        # The process itself too: it may not have made its process group yet. What it
        # started is then the runner's (a subreaper's) child, for kill_orphans.
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError):
                kill(pid, signal.SIGKILL)

    timer = threading.Timer(spec.timeout_seconds, expire)
    timer.start()
    try:
        ended = isolation.finish(pid, pipe)
    finally:
        timer.cancel()
        timer.join()  # no thread may be alive when the next run forks
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        kill_orphans()
    run.timed_out = expired.is_set()
    run.exit_code = -signal.SIGKILL if run.timed_out else ended.exit_code
    run.isolated = ended.isolated
    run.isolation_error = "" if ended.isolated else ended.problem
    run.duration_seconds = round(time.monotonic() - started, 3)
    run.output_sha256 = _sha256_fd(log_fd)
    run.fixture_seal_after = _fixture_seal(spec)
    return run


def run_twice(spec: RunSpec, logs: Sequence[Path]) -> DoubleRun:
    """Both runs of a property. Meant for a process of its own (the PropertyDoubleRun
    action): after each run every remaining child of this process is killed."""
    become_subreaper()
    interfaces = isolation.network_interfaces()
    fds = [_private_log(path) for path in logs]
    try:
        first = run_once(spec, 1, fds[0])
        second = run_once(spec, 2, fds[1])
    finally:
        for fd, path in zip(fds, logs, strict=True):
            publish_log(fd, path)
    classification = outcome.classify(
        outcome.RunOutcome(
            exit_codes=(first.exit_code, second.exit_code),
            timed_out=(first.timed_out, second.timed_out),
        )
    )
    return DoubleRun(
        spec=spec,
        runs=(first, second),
        classification=classification,
        network_blocked=isolation.network_blocked(interfaces),
        network_interfaces=interfaces,
    )
