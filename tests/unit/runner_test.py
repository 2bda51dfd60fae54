"""The double runner against real processes: exit codes, signals, timeouts, leftovers."""

import os
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from unittest import mock

from absl.testing import absltest

from agent_gate import runner


class RunnerTest(absltest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))

    def _property(self, body: str, timeout: float = 20.0) -> runner.RunSpec:
        """A property executable with a runfiles tree, as Bazel lays one out."""
        executable = self.root / "prop"
        executable.write_text("#!/bin/bash\n" + body + "\n")
        executable.chmod(executable.stat().st_mode | stat.S_IXUSR)
        (self.root / "prop.runfiles" / "ws").mkdir(parents=True, exist_ok=True)
        (self.root / "prop.runfiles" / "ws" / "data.txt").write_text("fixture\n")
        return runner.RunSpec(
            property_id="p.id",
            label="//:p",
            executable=executable,
            workspace="ws",
            timeout_seconds=timeout,
            run_id="r1",
        )

    def _run(self, spec: runner.RunSpec):
        logs = [self.root / "run1.log", self.root / "run2.log"]
        return runner.run_twice(spec, logs)

    def test_pass_pass(self):
        result = self._run(self._property("exit 0"))
        self.assertEqual([r.exit_code for r in result.runs], [0, 0])
        self.assertEqual(result.classification, "pass")
        self.assertEqual([r.run_number for r in result.runs], [1, 2])

    def test_equal_nonzero_is_fail(self):
        result = self._run(self._property("exit 3"))
        self.assertEqual([r.exit_code for r in result.runs], [3, 3])
        self.assertEqual(result.classification, "fail")

    def test_split_on_run_number_is_flake(self):
        result = self._run(self._property("[[ $TEST_RUN_NUMBER == 1 ]]"))
        self.assertEqual([r.exit_code for r in result.runs], [0, 1])
        self.assertEqual(result.classification, "flake")

    def test_unequal_nonzero_is_flake(self):
        result = self._run(self._property("exit $((TEST_RUN_NUMBER + 1))"))
        self.assertEqual([r.exit_code for r in result.runs], [2, 3])
        self.assertEqual(result.classification, "flake")

    def test_signals_are_negative_codes(self):
        killed = self._run(self._property("kill -KILL $$"))
        self.assertEqual([r.exit_code for r in killed.runs], [-signal.SIGKILL] * 2)
        self.assertEqual(killed.classification, "fail")
        segv = self._run(self._property("kill -SEGV $$"))
        self.assertEqual([r.exit_code for r in segv.runs], [-signal.SIGSEGV] * 2)

    def test_hang_in_both_runs_times_out_as_fail(self):
        started = time.monotonic()
        result = self._run(self._property("sleep 60", timeout=0.5))
        self.assertLess(time.monotonic() - started, 30)
        self.assertEqual([r.timed_out for r in result.runs], [True, True])
        self.assertEqual(result.classification, "fail")

    def test_hang_in_one_run_is_flake(self):
        result = self._run(self._property("[[ $TEST_RUN_NUMBER == 2 ]] && sleep 60; exit 0", 0.5))
        self.assertEqual([r.timed_out for r in result.runs], [False, True])
        self.assertEqual(result.classification, "flake")

    def _assert_ended(self, pid_file: Path) -> None:
        pid = int(pid_file.read_text())
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        self.fail(f"child {pid} of the property still runs after the double run")

    def test_children_do_not_outlive_the_run(self):
        pid_file = self.root / "child.pid"
        result = self._run(self._property(f"sleep 300 & echo $! > {pid_file}; exit 0"))
        self.assertEqual(result.classification, "pass")
        self._assert_ended(pid_file)

    def _escaping_child(self) -> tuple[runner.RunSpec, Path]:
        # setsid leaves the run's process group: only the subreaper's sweep finds it.
        pid_file = self.root / "escaped.pid"
        body = (
            f"setsid bash -c 'echo $$ > {pid_file}; exec sleep 300' </dev/null &>/dev/null &\n"
            f"while [[ ! -s {pid_file} ]]; do sleep 0.01; done"
        )
        return self._property(body), pid_file

    def test_child_in_its_own_session_does_not_outlive_the_run(self):
        spec, pid_file = self._escaping_child()
        self.assertEqual(self._run(spec).classification, "pass")
        self._assert_ended(pid_file)

    def test_child_in_its_own_session_is_found_without_task_children_files(self):
        # Kernels without CONFIG_PROC_CHILDREN: the sweep scans every /proc/<pid>/stat.
        spec, pid_file = self._escaping_child()
        with mock.patch.object(runner, "children_from_tasks", return_value=None):
            self.assertEqual(self._run(spec).classification, "pass")
        self._assert_ended(pid_file)

    def test_both_child_listings_see_the_same_children(self):
        if runner.children_from_tasks() is None:
            self.skipTest("this kernel has no /proc/<pid>/task/<tid>/children files")
        children = [subprocess.Popen(["sleep", "300"]) for _ in range(3)]
        try:
            pids = sorted(child.pid for child in children)
            self.assertEqual(sorted(runner.children_from_tasks() or []), pids)
            self.assertEqual(sorted(runner.children_from_scan()), pids)
        finally:
            for child in children:
                child.kill()
                child.wait()
        self.assertEqual(runner.children_from_tasks(), [])
        self.assertEqual(runner.children_from_scan(), [])

    def test_test_environment_like_bazel(self):
        dump = self.root / "env"
        body = (
            f'echo "$TEST_RUN_NUMBER $TZ $LC_ALL $PYTHONHASHSEED $SOURCE_DATE_EPOCH '
            f'$TEST_WORKSPACE $TEST_TARGET $PWD $TEST_TMPDIR $HOME" >> {dump}; '
            "test -d $TEST_TMPDIR && test -d $TEST_UNDECLARED_OUTPUTS_DIR && "
            'test -f "$TEST_SRCDIR/ws/data.txt" && test -n "$XML_OUTPUT_FILE"'
        )
        result = self._run(self._property(body))
        self.assertEqual(result.classification, "pass")
        first, second = (line.split() for line in dump.read_text().splitlines())
        self.assertEqual(
            first[:7], ["1", "UTC", "C.UTF-8", "0", runner.SOURCE_DATE_EPOCH, "ws", "//:p"]
        )
        self.assertEqual(second[0], "2")
        self.assertEqual(Path(first[7]).name, "ws")
        self.assertNotEqual(first[8], second[8], "each run needs a fresh TEST_TMPDIR")
        self.assertNotEqual(first[9], second[9], "each run needs a fresh HOME")

    def test_megabytes_of_output_are_hashed_not_kept_in_memory(self):
        result = self._run(self._property("head -c 20000000 /dev/zero; exit 0"))
        self.assertEqual(result.classification, "pass")
        self.assertEqual(result.runs[0].output_sha256, result.runs[1].output_sha256)
        self.assertEqual((self.root / "run1.log").stat().st_size, 20_000_000)

    def test_fixture_seal_before_and_after(self):
        fixture = self.root / "fix" / "a.txt"
        fixture.parent.mkdir()
        fixture.write_text("one\n")
        spec = self._property(f"[[ $TEST_RUN_NUMBER == 2 ]] && echo tampered >> {fixture}; exit 0")
        spec = runner.RunSpec(
            **{**spec.__dict__, "repo_root": self.root, "fixture_paths": ("fix/a.txt",)}
        )
        result = self._run(spec)
        first, second = result.runs
        self.assertEqual(first.fixture_seal_before, first.fixture_seal_after)
        self.assertNotEqual(second.fixture_seal_before, second.fixture_seal_after)


if __name__ == "__main__":
    absltest.main()
