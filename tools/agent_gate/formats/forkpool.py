"""The bytes of each task, in task order, from forked worker processes.

Workers are forked, not spawned: a fork costs no interpreter start-up, and the worker
inherits the tasks and the function producing their bytes, so only task numbers travel
to it. Each worker writes its results into its own memfd and the parent preads them
from there, so results come back as bytes, never pickled.

Limits: Linux only (fork and memfd_create; see `available`). The fork copies whatever
process calls this, with its memory, and leaves its other threads behind, so callers
use it for large work only and do small work in their own process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
from collections.abc import Callable, Iterator, Sequence

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs ~4 ms
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

# All task numbers (4 bytes each) go into a pipe in one write before any worker starts,
# so they must fit the smallest pipe: one 4 KiB page.
MAX_TASKS = 1000
# A worker's report of one task, on a pipe all workers share (one write of less than
# PIPE_BUF bytes, so reports never interleave): worker, task, status, and where the
# task's bytes (or error message) lie in the worker's memfd.
_REPORT = struct.Struct("=IIIQQ")
_DONE, _EXPECTED, _CRASHED = 0, 1, 2
# A test hook, run in a worker before each task: tests kill the worker with it, to
# check that a dead worker becomes WorkerDied. None otherwise.
_worker_hook: Callable[[], object] | None = None


class WorkerDied(Exception):
    """A worker ended before reporting all its tasks, so some results are missing."""

    def __init__(self, how: str) -> None:
        super().__init__(f"a worker process died ({how}) before finishing its tasks")
        self.how = how  # e.g. "killed by SIGKILL", "exit status 1"


def available() -> bool:
    """Whether this platform can fork workers and get their bytes back through memfds."""
    return hasattr(os, "fork") and hasattr(os, "memfd_create")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _worker_main(
    tasks: Sequence[T],
    produce: Callable[[T], bytes],
    expected: type[Exception],
    *,
    task_r: int,
    report_w: int,
    worker: int,
    out: int,
) -> None:
    """A forked worker's whole life; it never returns into the caller's code.

    Takes task numbers from the shared pipe until it is empty, reporting each result.
    """
    code = 1
    try:
        offset = 0
        while number := os.read(task_r, 4):
            task = int.from_bytes(number, "little")
            status = _DONE
            try:
                if _worker_hook is not None:
                    _worker_hook()
                result = produce(tasks[task])
            except expected as err:
                status, result = _EXPECTED, os.fsencode(str(err))
            except Exception:
                import traceback  # noqa: PLC0415  (only a bug gets here)

                status, result = _CRASHED, os.fsencode(traceback.format_exc())
            _write_all(out, result)
            os.write(report_w, _REPORT.pack(worker, task, status, offset, len(result)))
            offset += len(result)
        code = 0
    finally:
        os._exit(code)


def _reap(pids: list[int]) -> list[str]:
    """Wait for every worker; how the ones that did not exit cleanly ended."""
    ends = []
    while pids:
        try:
            code = os.waitstatus_to_exitcode(os.waitpid(pids.pop(), 0)[1])
        except ChildProcessError:  # reaped by someone else: no status to tell
            continue
        if code < 0:
            try:
                ends.append(f"killed by {signal.Signals(-code).name}")
            except ValueError:
                ends.append(f"killed by signal {-code}")
        elif code:
            ends.append(f"exit status {code}")
    return ends


def _collect(
    report_r: int, outs: list[int], count: int, pids: list[int], expected: type[Exception]
) -> Iterator[bytes]:
    """The results in task order, whatever order the workers finish them in."""
    reports: dict[int, tuple[int, int, int, int]] = {}
    for task in range(count):
        while task not in reports:
            report = os.read(report_r, _REPORT.size)
            if not report:  # every worker has exited, and one left its task unfinished
                raise WorkerDied(", ".join(_reap(pids)) or "no status")
            worker, done, status, offset, length = _REPORT.unpack(report)
            reports[done] = (worker, status, offset, length)
        worker, status, offset, length = reports.pop(task)
        result = os.pread(outs[worker], length, offset)
        if status == _EXPECTED:
            raise expected(os.fsdecode(result))  # the worker's exception, message intact
        if status == _CRASHED:
            raise RuntimeError(f"a worker process failed:\n{os.fsdecode(result)}")
        if len(result) != length:  # pread stops short of 2 GiB
            raise RuntimeError(f"read {len(result)} of a worker's {length}-byte result")
        yield result


def ordered_results(
    tasks: Sequence[T],
    produce: Callable[[T], bytes],
    workers: int,
    expected: type[Exception],
) -> Iterator[bytes]:
    """``produce(task)`` for each task, in task order, from forked workers pulling tasks.

    Starts ``min(workers, len(tasks))`` workers (one even for ``workers=1``). An
    ``expected`` exception in a worker is raised here as ``expected(message)``, message
    intact; a worker that dies raises WorkerDied; any other exception in a worker raises
    RuntimeError with its traceback; OSError if the workers cannot be run. On an error,
    or when the iterator is closed early, the remaining workers are killed; either way
    every worker is reaped and every descriptor closed.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if len(tasks) > MAX_TASKS:
        raise ValueError(f"at most {MAX_TASKS} tasks, got {len(tasks)}")
    fds: list[int] = []  # this process's ends, closed at the end
    pids: list[int] = []
    finished = False
    try:
        task_r, task_w = os.pipe()
        fds += (task_r, task_w)
        os.write(task_w, b"".join([i.to_bytes(4, "little") for i in range(len(tasks))]))
        fds.remove(task_w)
        os.close(task_w)  # an empty pipe then tells each worker it is done
        report_r, report_w = os.pipe()
        fds += (report_r, report_w)
        outs: list[int] = []
        for worker in range(min(workers, len(tasks))):
            outs.append(os.memfd_create("agent_gate.formats.forkpool"))
            fds.append(outs[-1])
            pid = os.fork()
            if pid == 0:
                _worker_main(
                    tasks,
                    produce,
                    expected,
                    task_r=task_r,
                    report_w=report_w,
                    worker=worker,
                    out=outs[-1],
                )
            pids.append(pid)
        fds.remove(report_w)
        os.close(report_w)  # the report pipe then ends when the last worker does
        yield from _collect(report_r, outs, len(tasks), pids, expected)
        finished = True
    finally:
        if not finished:  # an error or an abandoned iterator: stop the workers still running
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):  # reaped elsewhere
                    os.kill(pid, signal.SIGKILL)  # not waited for by us, so still ours
        _reap(pids)
        for fd in fds:
            os.close(fd)
