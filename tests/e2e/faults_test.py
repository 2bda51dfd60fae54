"""Misbehaving properties under real Bazel: hangs, signals, splits, network, environment.

tests/e2e/workspaces/faults has one strong property per fault, each with its own
locality, so a changed path picks the fault. Whatever a property does, the
runner records it as data and the gate decides; nothing is a promote unless both
runs exited 0.
"""

import shutil
import socket
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

from absl.testing import absltest  # noqa: E402
from google.protobuf import text_format  # noqa: E402

from agent_gate.drive import bazel_client, gate_target  # noqa: E402
from proto import agent_gate_pb2  # noqa: E402

SOURCE = ROOT / "tests" / "e2e" / "workspaces" / "faults"
NETWORK_PORT = 47613


class FaultsTest(absltest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workspace = Path(tempfile.mkdtemp(prefix="agent_gate-faults-")) / "faults"
        shutil.copytree(SOURCE, cls.workspace)
        workspace_file = cls.workspace / "WORKSPACE"
        workspace_file.write_text(
            workspace_file.read_text().replace('path = "../../../.."', f'path = "{ROOT}"')
        )

    @classmethod
    def tearDownClass(cls):
        bazel_client.shutdown(cls.workspace)
        shutil.rmtree(cls.workspace.parent, ignore_errors=True)

    def _gate(self, mode: str) -> agent_gate_pb2.Row:
        run = gate_target.run_gate(
            self.workspace, changed_paths=[f"{mode}/x"], run_id=gate_target.new_run_id(mode)
        )
        self.assertIsNotNone(run.report, run.problem)
        self.decision = run.report.decision
        self.exit_code = run.exit_code
        (row,) = [row for row in run.report.rows if row.property_id == f"fault.{mode}"]
        return row

    def _result(self, mode: str) -> agent_gate_pb2.RunResult:
        path = self.workspace / "bazel-bin" / "agent_gate.runs" / f"fault.{mode}.result.txtpb"
        return text_format.Parse(path.read_text(), agent_gate_pb2.RunResult())

    def test_hang_in_both_runs_is_a_stable_failure(self):
        row = self._gate("hang")
        self.assertEqual(row.classification, "fail")
        self.assertEqual(self.decision, "reject")
        self.assertNotEqual(self.exit_code, 0)
        runs = self._result("hang").runs
        self.assertEqual([run.timed_out for run in runs], [True, True])
        self.assertTrue(all(run.duration_seconds < 30 for run in runs))

    def test_signal_deaths_are_their_own_codes(self):
        for mode, code in (("sigkill", -9), ("sigsegv", -11)):
            with self.subTest(mode=mode):
                row = self._gate(mode)
                self.assertEqual(list(row.exit_codes), [code, code])
                self.assertEqual(self.decision, "reject")

    def test_split_exits_hold(self):
        row = self._gate("split")
        self.assertEqual(list(row.exit_codes), [0, 1])
        self.assertEqual(row.classification, "flake")
        self.assertEqual(self.decision, "hold")

    def test_runs_get_the_test_environment_and_pins(self):
        row = self._gate("env")
        self.assertEqual(list(row.exit_codes), [0, 0], "see probe.sh for what each code means")
        self.assertEqual(self.decision, "promote")

    def test_property_whose_test_target_is_missing_fails_closed(self):
        build = self.workspace / "BUILD.bazel"
        original = build.read_text()
        build.write_text(
            original + "\nstrong_property(\n"
            '    name = "fault.missing",\n'
            '    locality = ["missing"],\n'
            '    test = ":does_not_exist_test",\n'
            ")\n\n"
            "agent_gate(\n"
            '    name = "gate_with_missing_test",\n'
            '    ledger = "ledger.txtpb",\n'
            '    properties = [":fault.missing"],\n'
            ")\n"
        )
        try:
            run = gate_target.run_gate(
                self.workspace,
                "//:gate_with_missing_test",
                changed_paths=["missing/x"],
                run_id=gate_target.new_run_id("missing"),
            )
        finally:
            build.write_text(original)
        self.assertIsNone(run.report)
        self.assertNotIn(run.exit_code, (0, 3))
        self.assertIn("before the gate could decide", run.problem or "")
        self.assertIn("does_not_exist_test", run.log_path.read_text())

    def test_network_is_blocked(self):
        with socket.create_server(("127.0.0.1", NETWORK_PORT)) as listener:
            listener.settimeout(0.1)
            row = self._gate("network")
        self.assertEqual(list(row.exit_codes), [0, 0], "the property reached the host's loopback")


if __name__ == "__main__":
    absltest.main()
