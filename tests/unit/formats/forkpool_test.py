"""forkpool: results in task order, every worker failure told apart, nothing left behind."""

import os
import signal
import tempfile
import time
from pathlib import Path
from unittest import mock

from absl.testing import absltest

from agent_gate.formats import forkpool


class Refused(Exception):
    """The caller's expected error."""


def _kill_this_worker():
    os.kill(os.getpid(), signal.SIGKILL)


class ForkpoolTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.tmp = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))
        self.fds_before = len(os.listdir("/proc/self/fd"))

    def tearDown(self):
        # Whatever a test did, no worker and no descriptor outlives it.
        with self.assertRaises(ChildProcessError):
            os.waitpid(-1, os.WNOHANG)
        self.assertEqual(self.fds_before, len(os.listdir("/proc/self/fd")))
        super().tearDown()

    def results(self, tasks, produce, workers=3):
        return list(forkpool.ordered_results(tasks, produce, workers, Refused))

    def test_available_on_linux(self):
        self.assertTrue(forkpool.available())

    def test_order_kept_when_tasks_finish_out_of_order(self):
        finished = self.tmp / "finished"

        def produce(task: int) -> bytes:
            time.sleep(0.3 if task == 0 else 0.01 * (task % 3))
            fd = os.open(finished, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            os.write(fd, f"{task}\n".encode())
            os.close(fd)
            # Sizes from empty to well past a pipe buffer, so offsets in the memfd matter.
            return bytes([task]) * (task * 40_000)

        tasks = list(range(12))
        self.assertEqual([bytes([t]) * (t * 40_000) for t in tasks], self.results(tasks, produce))
        order = [int(line) for line in finished.read_text().split()]
        self.assertCountEqual(tasks, order)
        self.assertNotEqual(tasks, order)  # task 0 finished last, yet came out first

    def test_tasks_are_inherited_not_pickled(self):
        unpicklable = [lambda: b"a", lambda: b"b"]  # a fork shares them as they are
        self.assertEqual([b"a", b"b"], self.results(unpicklable, lambda make: make()))

    def test_each_task_runs_once_in_a_worker(self):
        results = self.results(range(40), lambda task: f"{task} {os.getpid()}\n".encode())
        tasks = [int(r.split()[0]) for r in results]
        pids = {int(r.split()[1]) for r in results}
        self.assertEqual(list(range(40)), tasks)
        self.assertNotIn(os.getpid(), pids)
        self.assertLessEqual(len(pids), 3)

    def test_one_worker_and_one_task(self):
        pid = lambda _: str(os.getpid()).encode()  # noqa: E731
        one_worker = self.results(range(5), pid, workers=1)
        self.assertEqual(1, len(set(one_worker)))  # one worker did all of them
        one_task = self.results(["only"], pid, workers=8)
        self.assertEqual(1, len(one_task))  # one worker for one task, not eight
        self.assertNotEqual(str(os.getpid()).encode(), one_task[0])
        self.assertEqual([], self.results([], pid))

    def test_expected_error_keeps_its_message(self):
        message = "t/ünï/new\nline: refused, with 'quotes' and a \\ backslash"

        def produce(task: int) -> bytes:
            if task == 7:
                raise Refused(message)
            return b"ok"

        with self.assertRaises(Refused) as ctx:
            self.results(range(20), produce)
        self.assertEqual(message, str(ctx.exception))

    def test_results_before_an_error_are_given(self):
        def produce(task: int) -> bytes:
            if task == 2:
                raise Refused("no")
            return b"%d" % task

        got = []
        with self.assertRaisesRegex(Refused, "^no$"):
            for result in forkpool.ordered_results(range(5), produce, 2, Refused):
                got.append(result)
        self.assertEqual([b"0", b"1"], got)

    def test_killed_worker_is_worker_died(self):
        with (
            mock.patch.object(forkpool, "_worker_hook", _kill_this_worker),
            self.assertRaises(forkpool.WorkerDied) as ctx,
        ):
            self.results(range(6), lambda _: b"x", workers=2)
        self.assertIn("killed by SIGKILL", ctx.exception.how)
        self.assertIn("died (killed by SIGKILL", str(ctx.exception))

    def test_one_killed_worker_among_finishing_ones_is_noticed(self):
        def produce(task: int) -> bytes:
            if task == 3:
                _kill_this_worker()
            return b"x"

        with self.assertRaises(forkpool.WorkerDied) as ctx:
            self.results(range(10), produce)
        self.assertEqual("killed by SIGKILL", ctx.exception.how)

    def test_worker_exit_status_is_told(self):
        with self.assertRaises(forkpool.WorkerDied) as ctx:
            self.results([0], lambda _: os._exit(3), workers=1)
        self.assertEqual("exit status 3", ctx.exception.how)

    def test_bug_in_a_worker_is_runtime_error_with_traceback(self):
        def buggy_produce(task: int) -> bytes:
            raise ValueError(f"a bug at task {task}")

        with self.assertRaises(RuntimeError) as ctx:
            self.results([0], buggy_produce)
        message = str(ctx.exception)
        self.assertIn("Traceback (most recent call last)", message)
        self.assertIn("buggy_produce", message)
        self.assertIn("ValueError: a bug at task 0", message)

    def test_abandoned_iterator_kills_its_workers(self):
        def produce(task: int) -> bytes:
            if task:
                time.sleep(60)
            return b"first"

        started = time.monotonic()
        results = forkpool.ordered_results(range(4), produce, 3, Refused)
        self.assertEqual(b"first", next(results))
        results.close()  # the sleeping workers are killed, not waited for
        self.assertLess(time.monotonic() - started, 30)

    def test_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "at least 1"):
            self.results([0], lambda _: b"", workers=0)
        with self.assertRaisesRegex(ValueError, "at most"):
            self.results(range(forkpool.MAX_TASKS + 1), lambda _: b"")


if __name__ == "__main__":
    absltest.main()
