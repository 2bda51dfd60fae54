"""The decision table (docs/decision-table.md), from the sealed fixture, row by row.

A row the test does not know how to check fails the test: the table is the contract.
"""

from pathlib import Path

from absl.testing import absltest
from runfiles import runfiles

from agent_gate.core import quorum
from agent_gate.formats import ledger
from proto import agent_gate_pb2

SEAL = "a" * 64
CATALOG = (
    quorum.PropertySpec(
        id="counter", strength="strong", locality=("store",), fixture_roots=("fx",)
    ),
    quorum.PropertySpec(id="resp", strength="strong", locality=("api",), fixture_roots=("fx",)),
)
RESULTS = {
    "pass/pass": (0, 0),
    "fail/fail": (1, 1),
    "split exits": (0, 1),
    "any": (0, 0),
    "any strong set": (0, 0),
}


def _fixture(path: str) -> Path:
    return Path(runfiles.Create().Rlocation(f"agent_gate/fixtures/decision_table/{path}"))


def _inputs(result: str, seal: str, ledger_column: str) -> quorum.GateInputs:
    codes = RESULTS[result]
    rows: tuple[quorum.LedgerRow, ...] = ()
    changed = ("store/counter.py",)
    debt_cap = 5
    if ledger_column == "property open":
        rows = (quorum.LedgerRow("counter", "open"),)
        changed = ("store/counter.py", "api/h.py")
    elif ledger_column == "open count above cap":
        rows = (quorum.LedgerRow("resp", "open"),)
        debt_cap = 0
    elif ledger_column == "all matched strong rows open":
        rows = (quorum.LedgerRow("counter", "open"),)
    return quorum.GateInputs(
        catalog=CATALOG,
        changed_paths=changed,
        outcomes={"counter": quorum.RunOutcome(codes), "resp": quorum.RunOutcome((0, 0))},
        fixtures=(
            quorum.FixtureSeal(
                agent_gate_pb2.FixtureTree(root="fx", seal_file="fx/fx.seal"),
                SEAL,
                SEAL if seal == "match" else "b" * 64,
            ),
        ),
        ledger=rows,
        commit_counts={"": 0},
        debt_cap=debt_cap,
    )


def _counter_row(report):
    return next(row for row in report.rows if row.property_id == "counter")


class DecisionTableTest(absltest.TestCase):
    def test_every_row_of_the_article_table(self):
        lines = _fixture("table.tsv").read_text(encoding="utf-8").splitlines()
        rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
        self.assertLen(rows, 7, "the decision table has seven rows")
        for result, seal, ledger_column, action in rows:
            with self.subTest(action=action):
                report = quorum.evaluate(_inputs(result, seal, ledger_column))
                row = _counter_row(report)
                if action == "vote yes":
                    self.assertEqual(row.vote, "yes")
                    self.assertEqual(report.decision, "promote")
                elif action == "reject; do not freeze":
                    self.assertEqual(report.decision, "reject")
                    self.assertIn("do not freeze", report.rule)
                elif action.startswith("hold"):
                    self.assertEqual(report.decision, "hold")
                    self.assertEqual(row.classification, "flake")
                elif action == "fixture fault; no freeze":
                    self.assertEqual(report.decision, "fixture_fault")
                elif action == "exclude from the vote; not a pass":
                    self.assertEqual(row.vote, "excluded")
                    self.assertEqual(report.decision, "promote")  # resp votes yes
                elif action == "stop the agent queue":
                    self.assertEqual(report.decision, "stop_queue")
                elif action == "reject; empty quorum":
                    self.assertEqual(report.decision, "reject")
                    self.assertRegex(report.rule, r"empty (strong )?quorum")
                else:
                    self.fail(f"unknown gate action in the table: {action!r}")

    def test_the_article_ledger_row_loads_verbatim(self):
        loaded = ledger.load_ledger(_fixture("article_row.json"))
        self.assertLen(loaded.freeze, 1)
        row = loaded.freeze[0]
        self.assertEqual(row.property_id, "counter.monotonic_under_replay")
        self.assertEqual(row.state, "open")
        self.assertEqual(row.retire_by_commit_count, 30)


if __name__ == "__main__":
    absltest.main()
