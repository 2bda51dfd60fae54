"""The double runner against real processes: exit codes, signals, timeouts, leftovers."""

import contextlib
import ctypes
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from absl.testing import absltest
from google.protobuf import text_format

from agent_gate.actions import isolation, runner
from agent_gate.formats import run_result
from proto import agent_gate_pb2


class RunnerTest(absltest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        self.mark = f"agent-gate-runner-test-{os.getpid()}-{time.monotonic_ns()}"

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

    def _marked(self) -> list[int]:
        """Live processes whose argv[0] is this test's mark (a run's pids are its own)."""
        found = []
        for entry in os.listdir("/proc"):
            with contextlib.suppress(OSError):
                if entry.isdigit() and Path("/proc", entry, "cmdline").read_bytes().startswith(
                    self.mark.encode()
                ):
                    found.append(int(entry))
        return found

    def test_children_do_not_outlive_the_run(self):
        body = f"(exec -a {self.mark} sleep 300) & sleep 0.2; exit 0"
        result = self._run(self._property(body))
        self.assertEqual(result.classification, "pass")
        self.assertEqual(self._marked(), [])

    def test_child_in_its_own_session_does_not_outlive_the_run(self):
        # setsid leaves the run's process group; the run's PID namespace still ends it.
        body = (
            f"setsid bash -c 'trap \"\" TERM HUP INT; exec -a {self.mark} sleep 300' "
            "</dev/null &>/dev/null & sleep 0.2; exit 0"
        )
        self.assertEqual(self._run(self._property(body)).classification, "pass")
        self.assertEqual(self._marked(), [])

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

    def _log(self, number: int) -> str:
        return (self.root / f"run{number}.log").read_text()

    def test_test_environment_like_bazel(self):
        body = (
            'echo "$TEST_RUN_NUMBER $TZ $LC_ALL $PYTHONHASHSEED $SOURCE_DATE_EPOCH '
            '$TEST_WORKSPACE $TEST_TARGET $PWD $TEST_TMPDIR $HOME"; '
            "test -d $TEST_TMPDIR && test -d $TEST_UNDECLARED_OUTPUTS_DIR && "
            'test -f "$TEST_SRCDIR/ws/data.txt" && test -n "$XML_OUTPUT_FILE"'
        )
        result = self._run(self._property(body))
        self.assertEqual(result.classification, "pass")
        first, second = (self._log(number).split() for number in (1, 2))
        self.assertEqual(
            first[:7], ["1", "UTC", "C.UTF-8", "0", runner.SOURCE_DATE_EPOCH, "ws", "//:p"]
        )
        self.assertEqual(second[0], "2")
        self.assertEqual(Path(first[7]).name, "ws")
        self.assertNotEqual(first[8], second[8], "each run needs a fresh TEST_TMPDIR")
        self.assertNotEqual(first[9], second[9], "each run needs a fresh HOME")

    def test_the_tests_args_and_env_reach_it_as_bazel_passes_them(self):
        body = (
            '[[ $# -eq 3 && $1 == "two words" && $2 == "" && $3 == "@-x" ]] || exit 11\n'
            "[[ $MODE == \"strict 'kept'\" && $TZ == Europe/Paris ]] || exit 12\n"
            "[[ $TEST_TMPDIR == /tmp/agent_gate.run* ]] || exit 13"
        )
        spec = self._property(body)
        bare = self._run(spec)
        self.assertEqual([r.exit_code for r in bare.runs], [11, 11], "without them the test fails")
        forwarded = replace(
            spec,
            test_args=("two words", "", "@-x"),
            # A runner-owned name never gets through, even if the rules let it.
            test_env=(("MODE", "strict 'kept'"), ("TZ", "Europe/Paris"), ("TEST_TMPDIR", "/x")),
        )
        result = self._run(forwarded)
        self.assertEqual([r.exit_code for r in result.runs], [0, 0], result.runs)

    def test_megabytes_of_output_are_hashed_not_kept_in_memory(self):
        result = self._run(self._property("head -c 20000000 /dev/zero; exit 0"))
        self.assertEqual(result.classification, "pass")
        self.assertEqual(result.runs[0].output_sha256, result.runs[1].output_sha256)
        self.assertEqual((self.root / "run1.log").stat().st_size, 20_000_000)

    def test_fixtures_are_sealed_before_and_after_and_cannot_be_written(self):
        fixture = self.root / "fix" / "a.txt"
        fixture.parent.mkdir()
        fixture.write_text("one\n")
        spec = self._property(f"echo tampered >> {fixture}")
        spec = runner.RunSpec(
            **{**spec.__dict__, "repo_root": self.root, "fixture_paths": ("fix/a.txt",)}
        )
        result = self._run(spec)
        self.assertEqual([run.exit_code for run in result.runs], [1, 1])
        self.assertIn("Read-only file system", self._log(1))
        self.assertEqual(fixture.read_text(), "one\n")
        seals = {
            seal
            for run in result.runs
            for seal in (run.fixture_seal_before, run.fixture_seal_after)
        }
        self.assertEqual(len(seals), 1)
        self.assertNotIn("", seals)

    # --- each run in namespaces of its own ---------------------------------------

    def test_runs_share_no_writable_path(self):
        """Run 1 writes a mark wherever it can; run 2 must find none, and none outlives them."""
        name = self.mark
        places = (
            f"/tmp /dev/shm /var/tmp $TMPDIR $TEST_TMPDIR $HOME $TEST_UNDECLARED_OUTPUTS_DIR "
            f'$PWD $TEST_SRCDIR $TEST_SRCDIR/ws "$(dirname "$0")" {self.root}'
        )
        body = f"""
for dir in {places}; do
  if [[ $TEST_RUN_NUMBER == 1 ]]; then
    echo written > "$dir/{name}" 2>/dev/null && echo "wrote $dir"
  elif [[ -e $dir/{name} ]]; then
    echo "found run 1's mark in $dir"; exit 1
  fi
done
# Run 1's log gets its name only after both runs: it cannot carry a message.
[[ $TEST_RUN_NUMBER == 1 || ! -e {self.root}/run1.log ]] || {{ echo "found run 1's log"; exit 1; }}
exit 0
"""
        result = self._run(self._property(body))
        self.assertEqual([run.exit_code for run in result.runs], [0, 0], self._log(2))
        self.assertTrue(all(run.isolated for run in result.runs))
        written = self._log(1)
        for private in ("wrote /tmp", "wrote /dev/shm", "wrote /tmp/agent_gate.run1/home"):
            self.assertIn(private, written)  # the run could write there, privately
        self.assertNotIn(f"wrote {self.root}\n", written)
        for place in ("/tmp", "/dev/shm", "/var/tmp", str(self.root)):
            self.assertEqual(
                list(Path(place).rglob(name)), [], f"a mark outlived the run in {place}"
            )

    def _host_entry_in_tmp(self) -> Path:
        """A directory in the host's /tmp (an output base may live there), with odd names."""
        host = Path(tempfile.mkdtemp(prefix=f"{self.mark}-", dir="/tmp"))
        self.addCleanup(shutil.rmtree, host)
        (host / "seen.txt").write_text("from the host\n")
        os.mkdir(os.path.join(os.fsencode(host), b"not-utf8-\xff"))
        # A name in /tmp itself that is not UTF-8 (a build action may leave one).
        odd = os.fsencode(f"/tmp/{self.mark}-") + b"\xff"
        os.mkdir(odd)
        self.addCleanup(os.rmdir, odd)
        return host

    @staticmethod
    def _host_entry_checks(host: Path, first: int) -> str:
        """Shell lines: the host entry reads as it was and takes no write (else exit first..)."""
        return "\n".join(
            [
                f'[[ $(cat {host}/seen.txt) == "from the host" ]] || exit {first}',
                f"echo x 2>/dev/null > {host}/seen.txt && exit {first + 1}",
                f"touch {host}/new 2>/dev/null && exit {first + 2}",
                f"[[ $(ls {host} | wc -l) == 2 ]] || exit {first + 3}",
            ]
        )

    def _assert_host_entry_unchanged(self, host: Path) -> None:
        self.assertEqual((host / "seen.txt").read_text(), "from the host\n")
        self.assertEqual(sorted(os.listdir(os.fsencode(host))), [b"not-utf8-\xff", b"seen.txt"])

    def test_what_was_in_tmp_stays_visible_read_only(self):
        """An output base may live in /tmp: its entries are bound back, whatever their names."""
        host = self._host_entry_in_tmp()
        body = f"""
{self._host_entry_checks(host, 1)}
[[ $(stat -c %a /tmp) == 1777 ]] || exit 5
exit 0
"""
        result = self._run(self._property(body))
        self.assertEqual([run.exit_code for run in result.runs], [0, 0], self._log(1))
        self._assert_host_entry_unchanged(host)

    def test_a_fixture_of_a_workspace_in_tmp_cannot_be_written(self):
        """A run that could change its fixture, even in a copy of its own, could make
        the data its test checks agree with broken code."""
        workspace = Path(tempfile.mkdtemp(prefix=f"{self.mark}-ws-", dir="/tmp"))
        self.addCleanup(shutil.rmtree, workspace)
        fixture = workspace / "fix" / "expected.txt"
        fixture.parent.mkdir()
        fixture.write_text("right\n")
        body = f"echo wrong > {fixture} || exit 1\n[[ $(cat {fixture}) == right ]]"
        spec = replace(
            self._property(body), repo_root=workspace, fixture_paths=("fix/expected.txt",)
        )
        result = self._run(spec)
        self.assertEqual([run.exit_code for run in result.runs], [1, 1], self._log(1))
        self.assertIn("Read-only file system", self._log(1))
        self.assertEqual(fixture.read_text(), "right\n")

    def test_a_planted_run_directory_in_tmp_is_not_the_runs(self):
        """A name in /tmp like a run's own directories is not bound back: the run's HOME
        would be the planter's."""
        host = self._host_entry_in_tmp()
        for number in (1, 2):
            planted = Path(f"/tmp/agent_gate.run{number}")
            try:
                (planted / "home").mkdir(parents=True)
            except FileExistsError:
                self.skipTest(f"{planted} exists: another runner test planted it")
            self.addCleanup(shutil.rmtree, planted)
            (planted / "home" / ".planted").write_text("not the run's\n")
        body = f"""
[[ ! -e $HOME/.planted && -d $HOME ]] || exit 1
{self._host_entry_checks(host, 2)}
exit 0
"""
        result = self._run(self._property(body))
        self.assertEqual([run.exit_code for run in result.runs], [0, 0], self._log(1))
        self._assert_host_entry_unchanged(host)

    def _in_a_mount_namespace(self, work) -> str:
        """`work()`'s repr, from a child with user and mount namespaces of its own."""
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # what it mounts lives and dies with the child's namespace
            try:
                isolation._enter_user_namespace(isolation._CLONE_NEWNS)
                os.write(write, repr(work()).encode())
            finally:
                os._exit(0)
        os.close(write)
        os.waitpid(child, 0)
        with os.fdopen(read) as answer:
            return answer.read()

    def test_a_file_system_mounted_below_tmp_stays_visible_to_a_run(self):
        """linux-sandbox mounts its execroot in the output base, which may be in /tmp."""
        holder = Path(tempfile.mkdtemp(prefix=f"{self.mark}-", dir="/tmp"))
        self.addCleanup(shutil.rmtree, holder)
        (holder / "mounted").mkdir()
        spec = self._property(f"[[ $(cat {holder}/mounted/seen.txt) == below ]]")

        def mount_and_run() -> list[int]:
            isolation._mount("tmpfs", str(holder / "mounted"), "tmpfs", 0)
            (holder / "mounted" / "seen.txt").write_text("below\n")
            return [run.exit_code for run in self._run(spec).runs]

        self.assertEqual(self._in_a_mount_namespace(mount_and_run), "[0, 0]")

    def test_entries_vanishing_from_tmp_do_not_break_isolation(self):
        """/tmp is shared with other processes: a name listed may be gone when it is bound."""
        churn = (
            "import os, sys\n"
            f"path = '/tmp/{self.mark}-' + sys.argv[1]\n"
            "while True:\n"
            "    os.close(os.open(path, os.O_CREAT | os.O_WRONLY)); os.unlink(path)\n"
        )
        churners = [subprocess.Popen([sys.executable, "-c", churn, str(n)]) for n in range(2)]
        try:
            results = [self._run(self._property("exit 0")) for _ in range(10)]
        finally:
            for n, churner in enumerate(churners):
                churner.kill()
                churner.wait()
                with contextlib.suppress(FileNotFoundError):  # killed between create and unlink
                    os.unlink(f"/tmp/{self.mark}-{n}")
        for result in results:
            self.assertEqual([run.isolation_error for run in result.runs], ["", ""])
            self.assertEqual([run.exit_code for run in result.runs], [0, 0])

    def test_ipc_objects_and_keys_are_the_runs_own(self):
        """SysV IPC and the session keyring outlive a process; they must not outlive a run."""
        add_key = (
            "import ctypes,sys; libc=ctypes.CDLL(None); "
            "n=libc.syscall(248,b'user',b'agent-gate-probe',b'x',1,-3); sys.exit(n<0)"
        )
        find_key = (
            "import ctypes,sys; libc=ctypes.CDLL(None); "
            "sys.exit(libc.syscall(250,10,-3,b'user',b'agent-gate-probe',0)>=0)"
        )
        body = f"""
if [[ $TEST_RUN_NUMBER == 1 ]]; then
  ipcmk -Q >/dev/null && ipcmk -M 4096 >/dev/null || exit 3
  python3 -c "{add_key}" || exit 4
  exit 0
fi
[[ -z $(ipcs -q -m | awk '$1 ~ /^0x/') ]] || {{ echo "run 1's IPC objects are here"; exit 1; }}
python3 -c "{find_key}" || {{ echo "run 1's key is here"; exit 2; }}
"""
        # A runner in a login session has a session keyring that every run would inherit.
        libc = ctypes.CDLL(None, use_errno=True)
        joined = libc.syscall(250, 1, b"agent-gate-runner-test")  # KEYCTL_JOIN_SESSION_KEYRING
        self.assertGreaterEqual(joined, 0, os.strerror(ctypes.get_errno()))
        result = self._run(self._property(body))
        self.assertEqual([run.exit_code for run in result.runs], [0, 0], self._log(2))

    def test_a_run_cannot_undo_its_isolation(self):
        body = """
umount /tmp 2>/dev/null && exit 1
umount -l /tmp 2>/dev/null && exit 2
mount -o remount,rw / 2>/dev/null && exit 3
mount -o remount,bind,rw "$PWD" 2>/dev/null && exit 4
touch "$TEST_SRCDIR/x" 2>/dev/null && exit 5
# Only the run's own processes are visible: its PID 1, itself and what it starts.
(( $(ls -d /proc/[0-9]* | wc -l) <= 6 )) || exit 6
kill -KILL $PPID  # PID 1 of the run's namespace: the kernel ignores this
exit 0
"""
        result = self._run(self._property(body))
        self.assertEqual([run.exit_code for run in result.runs], [0, 0])

    def test_network_is_the_runs_own_and_the_actions_is_recorded(self):
        body = "[[ $(awk -F: 'NR > 2 { gsub(/ /, \"\", $1); print $1 }' /proc/net/dev) == lo ]]"
        result = self._run(self._property(body))
        self.assertEqual([run.exit_code for run in result.runs], [0, 0])
        self.assertEqual(result.network_interfaces, isolation.network_interfaces())
        self.assertEqual(result.network_blocked, set(result.network_interfaces) <= {"lo"})

    def test_exec_failure_is_a_failing_run(self):
        spec = self._property("exit 0")
        spec.executable.chmod(0o644)
        result = self._run(spec)
        self.assertEqual([run.exit_code for run in result.runs], [127, 127])
        self.assertTrue(all(run.isolated for run in result.runs))
        self.assertIn("cannot execute", self._log(1))

    def test_without_user_namespaces_the_property_does_not_run(self):
        """A host that refuses namespaces: the result says so, and nothing ran unisolated."""
        unshare = shutil.which("unshare")
        if unshare is None:
            self.skipTest("no unshare(1)")
        spec = self._property("echo ran; exit 0")
        script = (
            "import sys; from pathlib import Path; from agent_gate.formats import run_result; "
            "from agent_gate.actions import runner; "
            f"spec = runner.RunSpec('p.id', '//:p', Path({str(spec.executable)!r}), 'ws', 20.0); "
            f"logs = [Path({str(self.root)!r}) / f'run{{n}}.log' for n in (1, 2)]; "
            "sys.stdout.write(run_result.to_text(runner.run_twice(spec, logs)))"
        )
        # No user namespace may be created below this one: what a locked-down host does.
        shell = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
        command = [unshare, "--user", "--map-root-user", "sh", "-c", shell, "sh"]
        done = subprocess.run(
            [*command, sys.executable, "-c", script],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            capture_output=True,
            text=True,
            check=False,
        )
        if "max_user_namespaces" in done.stderr:
            self.skipTest(f"cannot limit user namespaces here: {done.stderr}")
        self.assertEqual(done.returncode, 0, done.stderr)
        result = text_format.Parse(done.stdout, agent_gate_pb2.RunResult())
        self.assertEqual([run.isolated for run in result.runs], [False, False])
        self.assertEqual([run.exit_code for run in result.runs], [isolation.NOT_RUN] * 2)
        self.assertIn("unshare", result.runs[0].isolation_error)
        self.assertEqual(self._log(1), "", "the property ran without isolation")
        problem = run_result.untrusted(result) or ""
        self.assertTrue(problem.startswith("run the gate under linux-sandbox"), problem)
        self.assertIn("could not be isolated", problem)


if __name__ == "__main__":
    absltest.main()
