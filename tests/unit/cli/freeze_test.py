"""The pure parts of `agent-gate freeze`: which clean-tree runs justify a row, the row
itself, and `freeze list` (commits spent against budget, debt)."""

from absl.testing import absltest

from agent_gate.cli import freeze
from agent_gate.formats import ledger
from proto import agent_gate_pb2

SEAL = "416d960d4898a0da240b55f5ae292c791583126bb0cb12867f156e79aad8bab1"


def _result(first: int, second: int, seal: str = SEAL) -> agent_gate_pb2.RunResult:
    result = agent_gate_pb2.RunResult(property_id="p", run_id="r")
    for number, code in ((1, first), (2, second)):
        result.runs.add(
            run_number=number,
            exit_code=code,
            fixture_seal_before=seal,
            fixture_seal_after=seal,
        )
    return result


def _row(state: str, commit: str, budget: int, pid: str = "p") -> agent_gate_pb2.Freeze:
    return agent_gate_pb2.Freeze(
        property_id=pid,
        state=state,
        opened_against_commit=commit,
        retire_by_commit_count=budget,
        owner="store-team",
        reason="split",
    )


class SplitVerdictTest(absltest.TestCase):
    def test_only_a_split_opens_a_row(self):
        self.assertIsNone(freeze.split_verdict(_result(0, 1)))
        self.assertIsNone(freeze.split_verdict(_result(1, 2)))  # unequal non-zero: a flake
        passed = freeze.split_verdict(_result(0, 0))
        self.assertIn("passed twice", passed)
        failed = freeze.split_verdict(_result(3, 3))
        self.assertIn("stable failure is never frozen", failed)

    def test_timeouts(self):
        one = _result(-9, 0)
        one.runs[0].timed_out = True
        self.assertIsNone(freeze.split_verdict(one))
        both = _result(-9, -9)
        for run in both.runs:
            run.timed_out = True
        self.assertIn("failed twice", freeze.split_verdict(both))


class RowTest(absltest.TestCase):
    def test_row_has_every_field_of_the_article(self):
        row = freeze.make_row(
            "counter.monotonic_under_replay",
            seal_value=SEAL,
            reason="exit mismatch across two runs on sealed fixtures",
            head="9c1d0e5a7b3f2e4d6c8a0b1f3e5d7c9a2b4d6e8f",
            budget=30,
            owner="unassigned",
        )
        text = ledger.format_row(row)
        for field in (
            'property_id: "counter.monotonic_under_replay"',
            'state: "open"',
            f'seal: "{SEAL}"',
            'opened_against_commit: "9c1d0e5a7b3f2e4d6c8a0b1f3e5d7c9a2b4d6e8f"',
            "retire_by_commit_count: 30",
            'owner: "unassigned"',
        ):
            self.assertIn(field, text)


class ListTest(absltest.TestCase):
    def test_spent_and_debt(self):
        rows = [
            _row("open", "a" * 40, 30, "p1"),  # 4 of 30: one row of debt
            _row("open", "b" * 40, 3, "p2"),  # 5 of 3: spent, two rows of debt
            _row("open", "c" * 40, 30, "p3"),  # unknown: spent
            _row("retired", "d" * 40, 1, "p4"),  # retired: no debt
        ]
        counts = {"a" * 40: 4, "b" * 40: 5, "c" * 40: None, "d" * 40: 9}
        self.assertEqual(freeze.debt(rows, counts), 5)
        lines = freeze.table(rows, counts, cap=4, path="ledger.txtpb")
        self.assertEqual(len(lines), 6)
        self.assertTrue(lines[0].startswith("property"))
        self.assertIn("4/30", lines[1])
        self.assertNotIn("spent", lines[1])
        self.assertIn("5/3 spent", lines[2])
        self.assertIn("unknown/30 spent", lines[3])
        self.assertIn("retired", lines[4])
        self.assertIn("9/1", lines[4])
        self.assertNotIn("spent", lines[4])
        self.assertIn("debt 5", lines[5])
        self.assertIn("stop_queue", lines[5])
        columns = {line.index("store-team") for line in lines[1:5]}
        self.assertLen(columns, 1, "the owner column is aligned")

    def test_within_the_cap(self):
        lines = freeze.table([], {}, cap=5, path="ledger.txtpb")
        self.assertIn("0 row(s), debt 0", lines[-1])
        self.assertIn("within the cap", lines[-1])


if __name__ == "__main__":
    absltest.main()
