"""Loading the evaluator's inputs: every broken input is an error in the report, never a promote."""

import json
import tempfile
from pathlib import Path

from absl.testing import absltest
from google.protobuf import text_format

from agent_gate.actions import evaluator_inputs
from agent_gate.core import quorum
from agent_gate.formats import gate_config, seal
from proto import agent_gate_pb2

SEAL = "416d960d4898a0da240b55f5ae292c791583126bb0cb12867f156e79aad8bab1"


def _result(property_id: str, codes=(0, 0), isolated=True, interfaces=("lo",), run_id="r") -> str:
    result = agent_gate_pb2.RunResult(
        property_id=property_id,
        run_id=run_id,
        classification="pass",
        network_blocked=set(interfaces) <= {"lo"},
        network_interfaces=interfaces,
    )
    for number, code in enumerate(codes, start=1):
        result.runs.add(run_number=number, exit_code=code, isolated=isolated)
    return text_format.MessageToString(result)


class GateLoadTest(absltest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        self.files = {
            "ws/ledger.txtpb": "# empty ledger\n",
            "ws/fix/fix.seal": seal.seal_line(SEAL),
            "ws/fix.actual.seal": seal.seal_line(SEAL),
            "ws/p.result.txtpb": _result("p"),
        }

    def _load(self, mode: str = "gate") -> agent_gate_pb2.GateReport:
        return quorum.evaluate(self._loaded(mode).inputs)

    def _loaded(self, mode: str = "gate") -> evaluator_inputs.LoadedGate:
        for name, text in self.files.items():
            path = self.dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

        def resolve(rlocation: str) -> Path | None:
            path = self.dir / rlocation
            return path if path.exists() else None

        config = {
            "mode": mode,
            "gate_label": "//:agent_gate",
            "gate_package": "",
            "catalog": [
                {
                    "id": "p",
                    "strength": "strong",
                    "locality": ["src"],
                    "fixture_roots": ["fix"],
                    "predicate_srcs": ["tests/p_test.py"],
                    "package": "",
                    "label": "//:p",
                }
            ],
            "fixtures": [
                {
                    "root": "fix",
                    "seal_file": "fix/fix.seal",
                    "expected": "ws/fix/fix.seal",
                    "actual": "ws/fix.actual.seal",
                }
            ],
            "results": {"p": {"result": "ws/p.result.txtpb", "logs": []}},
            "ledger": {"path": "ledger.txtpb", "rlocation": "ws/ledger.txtpb"},
            "changed_paths": ["src/x.py"],
            "debt_cap": 5,
            "rule_set_paths": [],
            "commit_counts": {},
            "override": {"by": "", "ignored_ids": []},
            "run_id": "r",
        }
        # Through the one reader, as the evaluator reads the file the rule wrote.
        loaded = evaluator_inputs.load(gate_config.parse(json.dumps(config)), resolve)
        self.assertEqual(loaded.inputs.full_pass, mode == "full_strong_pass")
        return loaded

    def assert_fails_closed(self, report, *needles):
        self.assertNotEqual(report.decision, "promote")
        self.assertEqual(report.decision, "review")
        text = "\n".join(report.errors)
        for needle in needles:
            self.assertIn(needle, text)

    def test_clean_inputs_promote(self):
        report = self._load()
        self.assertEqual(report.decision, "promote", report.reasons)
        self.assertEmpty(report.errors)

    def test_runs_of_this_run_id_are_fresh(self):
        self.assertTrue(self._loaded().runs_fresh)

    def test_a_run_result_of_another_run_id_is_not_fresh_and_fails_closed(self):
        self.files["ws/p.result.txtpb"] = _result("p", run_id="an-earlier-run")
        self.assertFalse(self._loaded().runs_fresh)
        # A result left by an earlier invocation is not this invocation's measurement.
        self.assert_fails_closed(self._load(), "run id 'r'", "'an-earlier-run'", "not fresh")

    def test_unparseable_ledger_names_file_and_line(self):
        self.files["ws/ledger.txtpb"] = "# c\nfreeze {\n  property_id: 'p'\n  state: open\n}\n"
        self.assert_fails_closed(self._load(), "ledger.txtpb:4")

    def test_unknown_property_in_ledger(self):
        self.files["ws/ledger.txtpb"] = 'freeze {\n  property_id: "nope"\n  state: "open"\n}\n'
        self.assert_fails_closed(self._load(), "ledger.txtpb:1", "nope")

    def test_duplicate_open_rows(self):
        row = 'freeze {\n  property_id: "p"\n  state: "open"\n}\n'
        self.files["ws/ledger.txtpb"] = row + row
        self.assert_fails_closed(self._load(), "ledger.txtpb:5")

    def test_missing_run_result(self):
        del self.files["ws/p.result.txtpb"]
        self.assert_fails_closed(self._load(), "p: run result", "missing")

    def test_corrupt_run_result(self):
        self.files["ws/p.result.txtpb"] = _result("p")[:25] + "\x00garbage {"
        self.assert_fails_closed(self._load(), "corrupt")

    def test_truncated_run_result_with_one_run(self):
        self.files["ws/p.result.txtpb"] = _result("p", codes=(0,))
        self.assert_fails_closed(self._load(), "runs 1 and 2")

    def test_full_strong_pass_mode_judges_every_strong_property(self):
        report = self._load(mode="full_strong_pass")
        self.assertEqual(report.decision, "promote", report.reasons)
        (row,) = report.rows
        self.assertEqual((row.matched, row.matched_by), (True, "(full strong pass)"))

    def test_result_of_another_property(self):
        self.files["ws/p.result.txtpb"] = _result("q")
        self.assert_fails_closed(self._load(), "runs 1 and 2")

    def test_property_that_wrote_into_its_fixtures(self):
        result = agent_gate_pb2.RunResult(property_id="p", run_id="r", network_blocked=True)
        result.runs.add(
            run_number=1, fixture_seal_before="a", fixture_seal_after="a", isolated=True
        )
        result.runs.add(
            run_number=2, fixture_seal_before="a", fixture_seal_after="b", isolated=True
        )
        self.files["ws/p.result.txtpb"] = text_format.MessageToString(result)
        self.assert_fails_closed(self._load(), "changed its fixtures")

    def test_fixtures_the_runner_could_not_seal_fail_closed(self):
        result = agent_gate_pb2.RunResult(property_id="p", run_id="r", network_blocked=True)
        for number in (1, 2):
            result.runs.add(
                run_number=number,
                fixture_seal_before="error: fx/a: cannot seal: No such file or directory",
                fixture_seal_after="error: fx/a: cannot seal: No such file or directory",
                isolated=True,
            )
        self.files["ws/p.result.txtpb"] = text_format.MessageToString(result)
        self.assert_fails_closed(self._load(), "could not seal its fixtures")

    def test_runs_that_were_not_isolated_fail_closed(self):
        result = text_format.Parse(_result("p", isolated=False), agent_gate_pb2.RunResult())
        result.runs[0].isolation_error = "unshare: Operation not permitted"
        self.files["ws/p.result.txtpb"] = text_format.MessageToString(result)
        self.assert_fails_closed(
            self._load(),
            "p: run the gate under linux-sandbox",
            "run 1 could not be isolated",
            "unshare: Operation not permitted",
        )

    def test_a_double_run_that_saw_the_network_fails_closed(self):
        self.files["ws/p.result.txtpb"] = _result("p", interfaces=("eth0", "lo"))
        self.assert_fails_closed(
            self._load(), "p: run the gate under linux-sandbox", "interfaces eth0, lo"
        )

    def test_a_result_without_isolation_fields_fails_closed(self):
        # What a runner from before isolation wrote: the fields are absent, so false.
        result = agent_gate_pb2.RunResult(property_id="p", run_id="r", classification="pass")
        result.runs.add(run_number=1)
        result.runs.add(run_number=2)
        self.files["ws/p.result.txtpb"] = text_format.MessageToString(result)
        self.assert_fails_closed(self._load(), "could not be isolated")

    def test_garbage_seal_file(self):
        self.files["ws/fix/fix.seal"] = "not a digest\n"
        self.assert_fails_closed(self._load(), "fix/fix.seal", "update_seal")

    def test_seal_mismatch_is_fixture_fault(self):
        self.files["ws/fix.actual.seal"] = seal.seal_line("0" * 64)
        report = self._load()
        self.assertEqual(report.decision, "fixture_fault")
        self.assertEmpty(report.errors)


if __name__ == "__main__":
    absltest.main()
