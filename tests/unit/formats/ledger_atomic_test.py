"""Freeze edits survive a kill at any point: the ledger is the old text or the new, never half.

`ledger.append_row` and `ledger.set_state` write the new text to a synced temp
file beside the ledger and rename it over the ledger. These tests kill a
process doing such edits with SIGKILL, the one signal nothing can clean up
after:

* at each step of the write in turn (after the temp file is created, in the
  middle of writing it, before its fsync, before its chmod, before the rename,
  after the rename, after the directory fsync), by a hook that kills the
  process there: the ledger is exactly the old text before the rename and
  exactly the new text after it;
* at random moments, hundreds of times, while a child appends rows in a loop:
  the ledger is always exactly one of the texts the loop passes through.

Every time it parses and validates, and once the next edit has run no temp file
is left: an edit removes the temp files of writers that died, and never one
whose writer is alive.
"""

import os
import random
import signal
import tempfile
import time
from pathlib import Path

from absl.testing import absltest

from agent_gate.formats import ledger
from proto import agent_gate_pb2

BASE = """\
# proto-file: agent_gate.proto
# proto-message: agent_gate.Ledger

freeze {
  property_id: "counter.monotonic_under_replay"
  state: "open"
  seal: "416d960d4898a0da240b55f5ae292c791583126bb0cb12867f156e79aad8bab1"
  reason: "exit mismatch across two runs on sealed fixtures"
  opened_against_commit: "9c1d0e5a7b3f2e4d6c8a0b1f3e5d7c9a2b4d6e8f"
  retire_by_commit_count: 30
  owner: "unassigned"
}
"""

KILL_POINTS = (
    "after_mkstemp",
    "mid_write",
    "before_fsync",
    "before_chmod",
    "before_replace",
    "after_replace",
    "after_dir_fsync",
)
# Where the rename has happened: the ledger holds the new text from there on.
RENAMED = ("after_replace", "after_dir_fsync")
RANDOM_KILLS = 300


def _row(index: int) -> agent_gate_pb2.Freeze:
    return agent_gate_pb2.Freeze(
        property_id=f"prop.{index}",
        state="open",
        seal="0" * 64,
        reason=f"split number {index}",
        opened_against_commit="c" * 40,
        retire_by_commit_count=index,
        owner="owner",
    )


def _suicide() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _install_kill_hook(point: str) -> None:
    """In a forked child: make the ledger write SIGKILL itself at `point`."""
    real_mkstemp = ledger.tempfile.mkstemp
    real_fdopen = os.fdopen
    real_fsync = os.fsync
    real_chmod = os.chmod
    real_replace = os.replace
    fsyncs = [0]

    def mkstemp(*args, **kwargs):
        made = real_mkstemp(*args, **kwargs)
        if point == "after_mkstemp":
            _suicide()
        return made

    class HalfWriter:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.handle.__exit__(*exc)

        def write(self, data):
            self.handle.write(data[: len(data) // 2])
            self.handle.flush()
            real_fsync(self.handle.fileno())
            _suicide()

        def __getattr__(self, name):
            return getattr(self.handle, name)

    def fdopen(fd, *args, **kwargs):
        handle = real_fdopen(fd, *args, **kwargs)
        return HalfWriter(handle) if point == "mid_write" else handle

    def fsync(fd):
        fsyncs[0] += 1
        if point == "before_fsync" and fsyncs[0] == 1:
            _suicide()
        real_fsync(fd)
        if point == "after_dir_fsync" and fsyncs[0] == 2:
            _suicide()

    def chmod(path, mode, **kwargs):
        if point == "before_chmod":
            _suicide()
        real_chmod(path, mode, **kwargs)

    def replace(src, dst, **kwargs):
        if point == "before_replace":
            _suicide()
        real_replace(src, dst, **kwargs)
        if point == "after_replace":
            _suicide()

    ledger.tempfile.mkstemp = mkstemp
    os.fdopen = fdopen
    os.fsync = fsync
    os.chmod = chmod
    os.replace = replace


def _run_in_child(work) -> int:
    """Fork; the child runs `work()` and exits 0; return the child's wait status."""
    pid = os.fork()
    if pid == 0:  # the child: never return into the test runner
        try:
            work()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return status


class LedgerAtomicTest(absltest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        self.path = self.dir / "ledger.txtpb"
        self.path.write_text(BASE)

    def leftovers(self) -> list[str]:
        return sorted(name for name in os.listdir(self.dir) if name != "ledger.txtpb")

    def assert_valid(self, text: str) -> agent_gate_pb2.Ledger:
        probe = self.dir.parent / f"{self.dir.name}-probe.txtpb"
        probe.write_text(text)
        try:
            return ledger.load_ledger(probe)
        finally:
            probe.unlink()

    def test_kill_at_every_step_leaves_old_or_new(self):
        edits = {
            "append_row": lambda: ledger.append_row(self.path, _row(1)),
            "set_state": lambda: ledger.set_state(
                self.path, "counter.monotonic_under_replay", "retired"
            ),
        }
        for name, edit in edits.items():
            for point in KILL_POINTS:
                with self.subTest(edit=name, point=point):
                    self.path.write_text(BASE)
                    old = BASE
                    edit()
                    new = self.path.read_text()
                    self.path.write_text(old)
                    self.assertNotEqual(old, new)

                    def work(point=point, edit=edit):
                        _install_kill_hook(point)
                        edit()

                    status = _run_in_child(work)
                    self.assertTrue(os.WIFSIGNALED(status), f"{point}: status {status}")
                    self.assertEqual(os.WTERMSIG(status), signal.SIGKILL)

                    text = self.path.read_text()
                    self.assertEqual(text, new if point in RENAMED else old, point)
                    self.assert_valid(text)
                    temp_files = self.leftovers()
                    if point in RENAMED:
                        self.assertEqual([], temp_files)
                    else:  # the window is real: a killed writer leaves its temp file ...
                        self.assertLen(temp_files, 1, point)
                        self.assertTrue(temp_files[0].endswith(".tmp"), temp_files)
                    # ... and the next edit, in a live process, removes it.
                    ledger.append_row(self.path, _row(2))
                    self.assertEqual([], self.leftovers())
                    self.assert_valid(self.path.read_text())

    def test_sigkill_at_random_moments_during_a_stream_of_edits(self):
        rng = random.Random(20240601)
        # The exact text after each completed append: all a reader may ever see.
        scratch = self.dir.parent / f"{self.dir.name}-states.txtpb"
        scratch.write_text(BASE)
        states = [BASE]
        for index in range(40):
            ledger.append_row(scratch, _row(index))
            states.append(scratch.read_text())
        landed_mid_write = 0
        for attempt in range(RANDOM_KILLS):
            self.path.write_text(BASE)
            ready_read, ready_write = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(ready_read)
                    os.write(ready_write, b"r")
                    for index in range(40):
                        ledger.append_row(self.path, _row(index))
                finally:
                    os._exit(0)
            os.close(ready_write)
            os.read(ready_read, 1)
            os.close(ready_read)
            time.sleep(rng.uniform(0, 0.03))
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)

            text = self.path.read_text()
            self.assertIn(text, states, f"attempt {attempt}: the ledger is neither old nor new")
            loaded = self.assert_valid(text)
            self.assertLen(loaded.freeze, states.index(text) + 1)
            if self.leftovers():
                landed_mid_write += 1
            ledger.append_row(self.path, _row(999))
            self.assertEqual([], self.leftovers(), f"attempt {attempt}")
            self.assertLen(ledger.load_ledger(self.path).freeze, states.index(text) + 2)
        print(f"{RANDOM_KILLS} random SIGKILLs, {landed_mid_write} between temp file and rename")

    def test_a_live_writers_temp_file_is_never_removed(self):
        live = self.dir / f".ledger.txtpb.{os.getppid()}.abc123.tmp"
        live.write_text("half a ledger")
        mine = self.dir / f".ledger.txtpb.{os.getpid()}.def456.tmp"
        mine.write_text("another")
        unrelated = self.dir / ".ledger.txtpb.notapid.tmp"
        unrelated.write_text("x")
        ledger.append_row(self.path, _row(1))
        self.assertTrue(live.exists())
        self.assertTrue(mine.exists())
        self.assertTrue(unrelated.exists())
        self.assertLen(ledger.load_ledger(self.path).freeze, 2)

    def test_a_dead_writers_temp_file_is_removed_by_the_next_edit(self):
        # A pid that just exited and was reaped: nothing runs under it for now.
        pid = self._dead_pid()
        stale = self.dir / f".ledger.txtpb.{pid}.xyz789.tmp"
        stale.write_text("half a ledger")
        ledger.set_state(self.path, "counter.monotonic_under_replay", "retired")
        self.assertFalse(stale.exists())
        self.assertEqual([], self.leftovers())

    @staticmethod
    def _dead_pid() -> int:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        return pid


if __name__ == "__main__":
    absltest.main()
