"""The CLI's own re-derivation of a verdict: agreement passes, every contradiction fails.

Real run-result files on disk (as the gate's runner writes them), the real quorum:
only the report is tampered with, one field at a time, as a forged report would be.
"""

import tempfile
from pathlib import Path

from absl.testing import absltest
from google.protobuf import text_format

from agent_gate.cli import catalog, verdict_check
from agent_gate.core import quorum
from agent_gate.drive.exit_codes import CliError
from proto import agent_gate_pb2

RUN_ID = "score-test-1"
CATALOG = catalog.Catalog(
    gate_label="//:agent_gate",
    gate_package="",
    properties=(
        quorum.PropertySpec(id="calc.sums", strength="strong", locality=("lib/calc",)),
        quorum.PropertySpec(id="calc.shape", strength="weak", locality=("lib/calc",)),
        quorum.PropertySpec(id="queue.order", strength="strong", locality=("lib/queue",)),
    ),
    fixtures=(),
    ledger_path="ledger.txtpb",
    debt_cap=1,
    rule_set_paths=(),
    admission_mutants={},
)
TOUCHED = ("lib/calc/calc.py",)


class VerdictCheckTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.results = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))

    def write_result(self, property_id: str, exits: tuple[int, int], run_id: str = RUN_ID):
        result = agent_gate_pb2.RunResult(
            property_id=property_id, run_id=run_id, network_blocked=True, network_interfaces=["lo"]
        )
        for number, code in enumerate(exits, start=1):
            result.runs.add(run_number=number, exit_code=code, isolated=True)
        path = self.results / f"{property_id}.result.txtpb"
        path.write_text(text_format.MessageToString(result))

    def honest_report(self, touched=TOUCHED) -> agent_gate_pb2.GateReport:
        outcomes = verdict_check.run_outcomes(self.results, ["calc.sums", "calc.shape"], RUN_ID)
        return quorum.evaluate(
            verdict_check.gate_inputs(
                CATALOG,
                changed_paths=touched,
                outcomes=outcomes,
                seals=(),
                rows=(),
                commit_counts={},
                override=None,
                run_id=RUN_ID,
            )
        )

    def check(self, reported: agent_gate_pb2.GateReport, touched=TOUCHED):
        return verdict_check.check(
            CATALOG,
            reported,
            results=self.results,
            changed_paths=touched,
            seals=(),
            rows=(),
            commit_counts={},
            override=None,
            run_id=RUN_ID,
        )

    def test_an_honest_promote_agrees(self):
        self.write_result("calc.sums", (0, 0))
        self.write_result("calc.shape", (0, 0))
        report = self.honest_report()
        self.assertEqual(report.decision, "promote")
        self.assertEqual(self.check(report).decision, "promote")

    def test_a_failed_run_under_a_forged_promote(self):
        self.write_result("calc.sums", (0, 0))
        self.write_result("calc.shape", (0, 0))
        forged = self.honest_report()
        self.write_result("calc.sums", (1, 1))  # what really ran
        with self.assertRaises(CliError) as raised:
            self.check(forged)
        message = str(raised.exception)
        self.assertIn("the report decides 'promote'", message)
        self.assertIn("row calc.sums", message)

    def test_every_row_field_is_compared(self):
        self.write_result("calc.sums", (0, 0))
        self.write_result("calc.shape", (0, 0))
        tamperings = {
            "vote": lambda row: setattr(row, "vote", "not_voting"),
            "classification": lambda row: setattr(row, "classification", "flake"),
            "exit_codes": lambda row: row.exit_codes.append(0),
            "matched": lambda row: setattr(row, "matched", False),
        }
        for name, tamper in tamperings.items():
            with self.subTest(name):
                report = self.honest_report()
                row = next(r for r in report.rows if r.property_id == "calc.shape")
                tamper(row)
                with self.assertRaises(CliError) as raised:
                    self.check(report)
                self.assertIn("row calc.shape", str(raised.exception))

    def test_a_dropped_or_invented_row(self):
        self.write_result("calc.sums", (0, 0))
        self.write_result("calc.shape", (0, 0))
        report = self.honest_report()
        del report.rows[2]
        with self.assertRaises(CliError) as raised:
            self.check(report)
        self.assertIn("no row for queue.order", str(raised.exception))
        report = self.honest_report()
        report.rows.add(property_id="made.up")
        with self.assertRaises(CliError) as raised:
            self.check(report)
        self.assertIn("made.up", str(raised.exception))

    def test_a_property_the_report_calls_unmatched_still_needs_its_runs(self):
        """The report hides queue.order's match; the CLI matches it itself and wants its runs."""
        touched = ("lib/calc/calc.py", "lib/queue/queue.py")
        self.write_result("calc.sums", (0, 0))
        self.write_result("calc.shape", (0, 0))
        report = self.honest_report(touched=TOUCHED)
        with self.assertRaises(CliError) as raised:
            self.check(report, touched=touched)
        self.assertIn("queue.order", str(raised.exception))

    def test_results_of_another_run_or_missing_are_not_trusted(self):
        self.write_result("calc.sums", (0, 0))
        self.write_result("calc.shape", (0, 0))
        report = self.honest_report()
        self.write_result("calc.sums", (0, 0), run_id="score-older")
        with self.assertRaises(CliError) as raised:
            self.check(report)
        self.assertIn("cannot be checked", str(raised.exception))
        (self.results / "calc.sums.result.txtpb").unlink()
        with self.assertRaises(CliError):
            self.check(report)

    def test_a_touched_guarded_path_is_not_a_promote(self):
        """A report that hides the ledger edit: the CLI's own guard sees it."""
        touched = ("lib/calc/calc.py", "ledger.txtpb")
        self.write_result("calc.sums", (0, 0))
        self.write_result("calc.shape", (0, 0))
        forged = self.honest_report(touched=TOUCHED)
        with self.assertRaises(CliError) as raised:
            self.check(forged, touched=touched)
        self.assertIn("the CLI's own evaluation 'review'", str(raised.exception))


if __name__ == "__main__":
    absltest.main()
