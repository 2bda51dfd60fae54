"""Faults of the double runner and of the gate's own plumbing, under real Bazel: fail closed.

tests/e2e/workspaces/runner_faults has one strong property per fault, each with
its own locality (a changed path `<mode>/x` picks it). faults_test.py already
covers hangs, signal deaths, splits, the environment and the network; this file
covers what attacks the runner and the evaluator themselves:

* a property whose daemon (own session, ignoring TERM/HUP/INT) outlives its run:
  the second run must not see the first run's daemon, and nothing may be left
  running after the gate, under linux-sandbox and without a sandbox (review);
* a property that exhausts memory (bounded by `ulimit -v 1 GiB`: the machine
  never gives more), and one that prints 30 MB on one line;
* a property that tries to SIGKILL the runner mid-run: its parent is PID 1 of the
  run's own namespace, so the kill is ignored and the runner records the run;
* a probe that, in run 1, leaves a mark everywhere it can write and, in run 2,
  fails if it finds one: both runs must pass and no mark may remain on the host,
  under linux-sandbox and without a sandbox (then the gate says review: the
  action saw the host's network);
* a run-result file truncated on disk between the double run and the evaluation;
* two gates started at once on one workspace;
* a full disk while the evaluator writes the report (a real ENOSPC: a tiny
  tmpfs in a private mount namespace);
* a property writing into its sealed fixtures, with and without a sandbox: the
  run's own namespace refuses the write either way.

No broken property may promote; each leaves a message, the ledger untouched and no process
behind. The workspace is copied once, with one Bazel server on a private output
base, shut down and deleted at the end. The last line printed reads
`runner faults: N cases tried, N failed closed`.

Run: cd /work/main && .venv/bin/python3 tests/e2e/runner_faults_test.py
"""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

from absl.testing import absltest  # noqa: E402
from google.protobuf import text_format  # noqa: E402

from agent_gate.drive import bazel_client, gate_target  # noqa: E402
from agent_gate.formats.report import JSON_NAME  # noqa: E402
from proto import agent_gate_pb2  # noqa: E402

SOURCE = ROOT / "tests" / "e2e" / "workspaces" / "runner_faults"
ORPHAN_MARK = b"agent-gate-orphan-probe"
# What the leak probe (mode `leak` of probe.sh) names every file it leaves.
LEAK_MARK = "agent-gate-leak-probe"
# The gate's test log holds a bounded tail of each failing run's output.
TEST_LOG_LIMIT = 256 * 1024
# Only what the Linux kernel, util-linux and a root (or user-namespace) shell
# provide is needed for the full-disk case; without them it says why it is skipped.
UNSHARE = shutil.which("unshare")

TALLY: dict[str, bool] = {}
TIMINGS: list[tuple[str, float, str]] = []
_state: dict[str, Path] = {}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _writable(function, path, _):
    parent = os.path.dirname(path)
    os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, os.stat(path).st_mode | stat.S_IRWXU)
    function(path)


def _orphans() -> list[int]:
    """Pids of live processes whose command line carries the orphan probe's mark."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path("/proc", entry, "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(ORPHAN_MARK):
            found.append(int(entry))
    return found


def setUpModule() -> None:
    # Not below /tmp: Bazel 7's sandbox mounts its own /tmp over the workspace.
    top = Path(tempfile.mkdtemp(prefix="agent_gate-runner-faults-", dir="/var/tmp")).resolve()
    workspace = top / "runner_faults"
    shutil.copytree(SOURCE, workspace)
    for entry in ("WORKSPACE", "MODULE.bazel"):  # the 4.2.3 and the 7.7.1 lane's
        entry_file = workspace / entry
        entry_file.write_text(
            entry_file.read_text().replace('path = "../../../.."', f'path = "{ROOT}"')
        )
    _state.update(top=top, workspace=workspace, output_base=top / "output_base")
    _say(f"  runner faults: workspace {workspace}")


def tearDownModule() -> None:
    top = _state.get("top")
    if top is not None:
        bazel_client.shutdown(_state["workspace"], output_base=_state["output_base"])
        shutil.rmtree(top, onerror=_writable)
    _say("  runner faults timings (the first gate starts the Bazel server):")
    for name, seconds, outcome in TIMINGS:
        _say(f"    {seconds:6.1f}s  {name} -> {outcome}")
    closed = sum(TALLY.values())
    _say(f"runner faults: {len(TALLY)} cases tried, {closed} failed closed")


class RunnerFaultsTest(absltest.TestCase):
    workspace: Path
    output_base: Path

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.workspace = _state["workspace"]
        cls.output_base = _state["output_base"]

    def setUp(self):
        self.ledger = (self.workspace / "ledger.txtpb").read_bytes()
        self.assertEqual(_orphans(), [], "an orphan probe runs before the test started")

    def tearDown(self):
        self.assertEqual(
            (self.workspace / "ledger.txtpb").read_bytes(), self.ledger, "the ledger changed"
        )
        self.assertEqual(_orphans(), [], "a process of a property outlived the gate")

    def gate(self, *modes: str, run_id: str | None = None, flags=(), timeout=600.0):
        return gate_target.run_gate(
            self.workspace,
            changed_paths=[f"{mode}/x" for mode in modes],
            run_id=run_id or gate_target.new_run_id("-".join(modes)),
            output_base=self.output_base,
            extra_flags=flags,
            work_dir=_state["top"] / "runs" / "-".join(modes) / str(time.monotonic_ns()),
            timeout_seconds=timeout,
        )

    def record(self, name: str, started: float, failed_closed: bool, outcome: str) -> None:
        TALLY[name] = failed_closed
        TIMINGS.append((name, time.monotonic() - started, outcome))
        _say(f"  runner faults: {name}: {outcome} in {time.monotonic() - started:.1f}s")

    def row(self, run: gate_target.GateRun, mode: str) -> agent_gate_pb2.Row:
        self.assertIsNotNone(run.report, run.problem)
        (row,) = [row for row in run.report.rows if row.property_id == f"fault.{mode}"]
        return row

    def run_log(self, mode: str, number: int) -> Path:
        return self.workspace / "bazel-bin" / "agent_gate.runs" / f"fault.{mode}.run{number}.log"

    def result_file(self, mode: str) -> Path:
        return self.workspace / "bazel-bin" / "agent_gate.runs" / f"fault.{mode}.result.txtpb"

    def assert_not_promoted(self, run: gate_target.GateRun) -> None:
        self.assertNotEqual(run.exit_code, gate_target.EXIT_TESTS_PASSED, run.problem)
        self.assertNotEqual(run.decision, "promote")
        if run.report is None:
            self.assertTrue(run.problem, "no report and no message")
        else:
            self.assertTrue(run.report.rule)

    # --- the property misbehaves --------------------------------------------------

    def result(self, mode: str) -> agent_gate_pb2.RunResult:
        text = self.result_file(mode).read_text()
        return text_format.Parse(text, agent_gate_pb2.RunResult())

    def assert_unsandboxed_review(self, run: gate_target.GateRun) -> None:
        """Without linux-sandbox the action sees the host's network: review, saying so."""
        self.assertEqual(run.decision, "review", run.problem)
        self.assertIn("run the gate under linux-sandbox", "\n".join(run.report.errors))

    def _orphan_case(self, name: str, flags: tuple[str, ...]) -> gate_target.GateRun:
        started = time.monotonic()
        run = self.gate("orphan", flags=flags)
        row = self.row(run, "orphan")
        self.record(
            name, started, run.decision != "promote", f"{run.decision} {list(row.exit_codes)}"
        )
        # Run 2 passes only if run 1's daemon survived into it: 1, 1 means it did not.
        self.assertEqual(list(row.exit_codes), [1, 1], self.run_log("orphan", 2).read_text())
        for number in (1, 2):
            self.assertIn("started daemon", self.run_log("orphan", number).read_text())
        self.assertEqual(_orphans(), [], "the daemon outlived the gate")
        return run

    def test_daemon_outliving_its_run_under_linux_sandbox(self):
        run = self._orphan_case("orphan_daemon_sandboxed", ())
        self.assertEqual(run.decision, "reject")

    def test_daemon_outliving_its_run_without_a_sandbox(self):
        run = self._orphan_case("orphan_daemon_unsandboxed", ("--spawn_strategy=local",))
        self.assert_unsandboxed_review(run)

    def _leak_case(self, name: str, flags: tuple[str, ...]) -> gate_target.GateRun:
        """Run 1 writes a mark everywhere it can; run 2 must find none; the host keeps none."""
        started = time.monotonic()
        self.assertEqual(self._host_marks(()), [], "a mark of an earlier probe is on the host")
        run = self.gate("leak", flags=flags)
        result = self.result("leak")
        codes = [r.exit_code for r in sorted(result.runs, key=lambda r: r.run_number)]
        first, second = (self.run_log("leak", n).read_text() for n in (1, 2))
        places = [line[6:] for line in first.splitlines() if line.startswith("place ")]
        left = self._host_marks(places)
        self.record(name, started, codes == [0, 0] and not left, f"{run.decision} {codes}")
        self.assertEqual(codes, [0, 0], f"{second}\n{result}")
        self.assertEqual([r.isolated for r in result.runs], [True, True])
        # The probe did write: privately, where a run may.
        for private in ("wrote /tmp", "wrote /dev/shm", "made a message queue"):
            self.assertIn(private, first)
        self.assertGreater(len(places), 15)
        self.assertEqual(left, [], "a run's mark outlived the gate")
        return run

    def _host_marks(self, places) -> list[str]:
        roots = {"/tmp", "/dev/shm", "/var/tmp", "/root", "/", str(_state["top"])}
        roots |= {place for place in places if not place.startswith("/proc/")}
        found = [str(Path(root, LEAK_MARK)) for root in sorted(roots)]
        found = [path for path in found if os.path.lexists(path)]
        # Anywhere in the copied workspace and its output base.
        found += [str(path) for path in _state["top"].rglob(LEAK_MARK)]
        return found

    def test_runs_share_nothing_under_linux_sandbox(self):
        run = self._leak_case("leak_probe_sandboxed", ())
        self.assertEqual(run.decision, "promote", run.report and run.report.errors)
        self.assertTrue(self.result("leak").network_blocked)
        self.assertEqual(list(self.result("leak").network_interfaces), ["lo"])

    def test_runs_share_nothing_without_a_sandbox(self):
        run = self._leak_case("leak_probe_unsandboxed", ("--spawn_strategy=local",))
        self.assertFalse(self.result("leak").network_blocked)
        self.assert_unsandboxed_review(run)

    def test_memory_exhaustion(self):
        started = time.monotonic()
        run = self.gate("memory")
        row = self.row(run, "memory")
        self.record("memory_exhausted", started, run.decision == "reject", run.decision)
        self.assertEqual(row.classification, "fail")
        self.assertEqual(run.decision, "reject")
        self.assertNotEqual(run.exit_code, 0)
        log = self.run_log("memory", 1).read_text()
        self.assertIn("MemoryError", log)
        self.assertIn("MiB", log)  # it did allocate before the bound stopped it

    def test_megabytes_of_output_on_one_line(self):
        started = time.monotonic()
        run = self.gate("chatty")
        row = self.row(run, "chatty")
        self.record("thirty_megabytes_of_output", started, run.decision == "reject", run.decision)
        self.assertEqual(list(row.exit_codes), [3, 3])
        self.assertEqual(run.decision, "reject")
        self.assertEqual(self.run_log("chatty", 1).stat().st_size, 30_000_000)
        # The gate's own log quotes a bounded tail, not 60 MB.
        self.assertIsNotNone(run.test_log_path)
        self.assertLess(run.test_log_path.stat().st_size, TEST_LOG_LIMIT)
        text = run.test_log_path.read_text(errors="replace")
        self.assertIn("--- fault.chatty, run 2", text)
        self.assertIn("cut to its last 2000 characters", text)
        # The report row carries the same bounded evidence, run by run.
        (first, second) = row.evidence
        self.assertEqual((first.run_number, second.run_number), (1, 2))
        self.assertEqual((first.exit_code, second.exit_code), (3, 3))
        self.assertLess(len(second.output_tail), 4096)
        self.assertGreater(second.output_bytes_omitted, 29_000_000)
        self.assertEqual(second.log, "bazel-bin/agent_gate.runs/fault.chatty.run2.log")

    # --- the runner or its result is broken -------------------------------------

    def test_a_property_cannot_kill_the_runner(self):
        """Its parent is PID 1 of the run's own namespace, which ignores its signals."""
        started = time.monotonic()
        run = self.gate("kill_runner")
        row = self.row(run, "kill_runner")
        self.record("property_kills_its_parent", started, True, f"{run.decision} {row.exit_codes}")
        self.assertIn("killing the runner, pid 1", self.run_log("kill_runner", 1).read_text())
        self.assertEqual(list(row.exit_codes), [0, 0])
        self.assertEqual(run.decision, "promote", run.report.errors)

    def test_run_result_truncated_on_disk(self):
        """The result file is cut short after the double run; the evaluator reads it as is.

        `--noexperimental_check_output_files` makes Bazel trust the output tree, so
        the up-to-date double run is not re-run and the gate test (never cached
        here) reads the damaged file, as it would after disk corruption.
        """
        started = time.monotonic()
        flags = ("--noexperimental_check_output_files", "--nocache_test_results")
        run_id = gate_target.new_run_id("truncated")
        first = self.gate("pass", run_id=run_id, flags=flags)
        self.assertEqual(first.decision, "promote", first.problem)
        result = self.result_file("pass")
        intact = result.read_bytes()
        outcomes = []
        for cut in (len(intact) // 2, 0):
            result.chmod(0o644)
            result.write_bytes(intact[:cut])
            run = self.gate("pass", run_id=run_id, flags=flags)
            self.assertEqual(result.read_bytes(), intact[:cut], "Bazel re-ran the double run")
            self.assert_not_promoted(run)
            self.assertEqual(run.decision, "review")
            errors = "\n".join(run.report.errors)
            self.assertRegex(errors, "is corrupt|is not runs 1 and 2 of this property")
            outcomes.append(run.decision)
        result.chmod(0o644)
        result.write_bytes(intact)
        self.record(
            "run_result_truncated", started, outcomes == ["review", "review"], str(outcomes)
        )

    def test_two_gates_at_once_on_one_workspace(self):
        """The second client waits for the server; each report is its own or there is none."""
        started = time.monotonic()
        runs: dict[str, gate_target.GateRun] = {}
        ids = {
            "pass": gate_target.new_run_id("together-pass"),
            "fail": gate_target.new_run_id("together-fail"),
        }

        def gate(mode: str) -> None:
            runs[mode] = self.gate(mode, run_id=ids[mode])

        threads = [threading.Thread(target=gate, args=(mode,)) for mode in ids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        waited = any(
            "Another command" in runs[mode].log_path.read_text(errors="replace") for mode in ids
        )
        outcomes = {mode: runs[mode].decision or f"none ({runs[mode].problem})" for mode in ids}
        self.record(
            "two_gates_at_once",
            started,
            runs["fail"].decision != "promote",
            f"{outcomes}, second client waited: {waited}",
        )
        for mode, expected in (("pass", "promote"), ("fail", "reject")):
            run = runs[mode]
            if run.report is None:  # the other gate's outputs replaced ours: no decision
                self.assertIn("not a promote", run.problem or "")
                continue
            self.assertEqual(run.report.run_id, ids[mode], "a report of the other gate")
            self.assertEqual(run.decision, expected, run.report.reasons)
            self.assertEqual(run.exit_code == gate_target.EXIT_TESTS_PASSED, expected == "promote")
        self.assertTrue(any(runs[mode].report is not None for mode in ids), outcomes)

    def test_disk_full_while_writing_the_report(self):
        """A real ENOSPC: the evaluator of a promoting gate writes into a full tmpfs."""
        started = time.monotonic()
        run = self.gate("pass")
        self.assertEqual(run.decision, "promote", run.problem)
        evaluator = self.workspace / "bazel-bin" / "agent_gate"
        self.assertTrue(os.access(evaluator, os.X_OK))
        if UNSHARE is None:
            self.skipTest("no unshare(1): cannot mount a private tmpfs")
        mount = _state["top"] / "full"
        outcomes = []
        # No room at all; then room for a page or two (some reports fit, not all).
        for size_kib, filler_kib in ((8, 8), (16, 8)):
            mount.mkdir(exist_ok=True)
            script = (
                f'mount -t tmpfs -o size={size_kib}k tmpfs "$1" || exit 90\n'
                f'head -c {filler_kib * 1024} /dev/zero > "$1/filler" 2>/dev/null\n'
                'TEST_UNDECLARED_OUTPUTS_DIR="$1/out" XML_OUTPUT_FILE="$1/test.xml" "$2"\n'
                'echo "evaluator exit $?"\n'
                'ls -A "$1/out" 2>/dev/null | sed "s/^/left: /"\n'
            )
            command = [UNSHARE, "--mount", "--propagation", "private", "sh", "-c", script]
            done = subprocess.run(
                [*command, "sh", str(mount), str(evaluator)],
                cwd=self.workspace,
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
            )
            if "evaluator exit" not in done.stdout:
                self.skipTest(f"cannot mount a private tmpfs here: {done.stderr.strip()}")
            self.assertIn("agent_gate: promote", done.stdout)  # it decided ...
            self.assertIn("evaluator exit 1", done.stdout)  # ... but fails: not a promote
            self.assertIn("could not write the report", done.stdout)
            self.assertIn("No space left on device", done.stdout)
            self.assertNotIn(f"left: {JSON_NAME}", done.stdout, "a decision file was left")
            outcomes.append(f"{size_kib}k: exit 1, no {JSON_NAME}")
        self.record("disk_full_writing_the_report", started, True, "; ".join(outcomes))

    def test_fixture_write_with_and_without_a_sandbox(self):
        """The run's own namespace refuses the write, whether or not linux-sandbox runs it."""
        started = time.monotonic()
        fixture = self.workspace / "data" / "cases.txt"
        original = fixture.read_bytes()
        try:
            run = self.gate("fixture_writer", flags=("--spawn_strategy=local",))
            self.assertIn("fixture write refused", self.run_log("fixture_writer", 1).read_text())
        finally:
            fixture.write_bytes(original)
        self.record("fixture_written_unsandboxed", started, run.decision == "review", run.decision)
        self.assert_not_promoted(run)
        self.assert_unsandboxed_review(run)
        sandboxed = self.gate("fixture_writer")
        self.assertIn("fixture write refused", self.run_log("fixture_writer", 1).read_text())
        self.assertEqual(fixture.read_bytes(), original)
        self.assertEqual(sandboxed.decision, "promote", "a refused write leaves a clean pass")


if __name__ == "__main__":
    absltest.main()
