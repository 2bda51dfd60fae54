"""Runs one property twice, the way `bazel test --runs_per_test=2` would, and records it.

Both runs use the same command, the same runfiles and the same fixtures; each gets
a fresh TEST_TMPDIR and HOME. What the article says a seal cannot pin (clock zone,
locale, hash seed, build time) is pinned here. The result is data: a failing,
hanging or crashing property never makes the runner itself fail.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_gate import outcome

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
    fixture_paths: tuple[str, ...] = ()


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


@dataclass(frozen=True)
class DoubleRun:
    """Both runs of a property and their classification (the `RunResult` message)."""

    spec: RunSpec
    runs: tuple[Run, Run]
    classification: str


def runfiles_dir(executable: Path) -> Path:
    return executable.with_name(executable.name + ".runfiles")


def test_environment(spec: RunSpec, run_number: int, scratch: Path) -> dict[str, str]:
    """The environment Bazel's test runner gives a test, plus determinism pins."""
    runfiles = runfiles_dir(spec.executable)
    tmp = scratch / "tmp"
    home = scratch / "home"
    outputs = scratch / "outputs"
    for directory in (tmp, home, outputs, scratch / "annotations"):
        directory.mkdir(parents=True, exist_ok=True)
    env = {key: os.environ[key] for key in _INHERITED if key in os.environ}
    env.setdefault("PATH", "/usr/bin:/bin")
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
            "HOME": str(home),
            "XML_OUTPUT_FILE": str(scratch / "test.xml"),
            "TEST_UNDECLARED_OUTPUTS_DIR": str(outputs),
            "TEST_UNDECLARED_OUTPUTS_ANNOTATIONS_DIR": str(scratch / "annotations"),
            "TEST_PREMATURE_EXIT_FILE": str(scratch / "premature_exit"),
            "TEST_WARNINGS_OUTPUT_FILE": str(scratch / "warnings"),
            "TEST_TIMEOUT": str(int(spec.timeout_seconds)),
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH,
        }
    )
    return env


def _fixture_seal(spec: RunSpec) -> str:
    if not spec.fixture_paths:
        return ""
    # Imported here: most properties read no fixture, and every action pays its imports.
    from agent_gate import seal  # noqa: PLC0415

    try:
        return seal.seal_files(spec.repo_root, spec.fixture_paths)
    except (OSError, seal.SealError) as error:
        return f"error: {error}"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kills the run and every child it left in its process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


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


def run_once(spec: RunSpec, run_number: int, log_path: Path) -> Run:
    run = Run(run_number=run_number)
    run.fixture_seal_before = _fixture_seal(spec)
    with tempfile.TemporaryDirectory(prefix=f"run{run_number}-") as scratch:
        env = test_environment(spec, run_number, Path(scratch))
        cwd = runfiles_dir(spec.executable) / spec.workspace
        started = time.monotonic()
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [str(spec.executable)],
                cwd=cwd if cwd.is_dir() else runfiles_dir(spec.executable),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            # A timer kills the run at its timeout while wait() blocks: Popen.wait with
            # a timeout polls in sleeps of up to 50 ms, which every run would pay.
            expired = threading.Event()

            def expire() -> None:
                expired.set()
                _kill_group(process)

            timer = threading.Timer(spec.timeout_seconds, expire)
            timer.start()
            try:
                run.exit_code = process.wait()
            finally:
                timer.cancel()
                _kill_group(process)
                kill_orphans()
            run.timed_out = expired.is_set()
        run.duration_seconds = round(time.monotonic() - started, 3)
    run.output_sha256 = _sha256_file(log_path)
    run.fixture_seal_after = _fixture_seal(spec)
    return run


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def run_twice(spec: RunSpec, logs: Sequence[Path]) -> DoubleRun:
    """Both runs of a property. Meant for a process of its own (the PropertyDoubleRun
    action): after each run every remaining child of this process is killed."""
    first_log, second_log = logs
    become_subreaper()
    first = run_once(spec, 1, first_log)
    second = run_once(spec, 2, second_log)
    classification = outcome.classify(
        outcome.RunOutcome(
            exit_codes=(first.exit_code, second.exit_code),
            timed_out=(first.timed_out, second.timed_out),
        )
    )
    return DoubleRun(spec=spec, runs=(first, second), classification=classification)
