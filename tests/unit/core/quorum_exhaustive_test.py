"""Exhaustive check of the quorum evaluator against an independent statement of the rules.

Every property is one of 24 kinds (strength x matched x two-run outcome x frozen); every
catalog of 0 to 3 properties is tried, with and without a drifted fixture tree, with the
ledger debt under, at and over the cap. The scheduled full strong pass, a mode of the
same evaluator, is tried too, over the kinds it can meet (every strong property
matched, every weak one not, no diff). The oracle below transcribes the decision
table and its precedence (docs/decision-table.md) as data: it collects every decision
whose row applies, then takes the one ranked first. It shares no code with quorum.py
beyond the input types.
"""

import itertools
from dataclasses import dataclass

from absl.testing import absltest

from agent_gate.core.quorum import (
    FixtureSeal,
    GateInputs,
    LedgerRow,
    PropertySpec,
    RunOutcome,
    evaluate,
)
from proto import agent_gate_pb2

# The precedence of docs/decision-table.md, written out rather than imported so a
# reordering in quorum.py is caught.
RANK = {"stop_queue": 0, "fixture_fault": 1, "review": 2, "reject": 3, "hold": 4, "promote": 5}

# What each outcome of the decision table looks like as two runs.
RUNS = {"pass": (0, 0), "fail": (3, 3), "flake": (0, 4)}


@dataclass(frozen=True)
class Kind:
    strength: str
    matched: bool
    outcome: str
    frozen: bool


KINDS = [
    Kind(strength, matched, outcome, frozen)
    for strength in ("strong", "weak")
    for matched in (True, False)
    for outcome in RUNS
    for frozen in (True, False)
]

# docs/decision-table.md, row by row, as (matched, frozen, outcome) -> (classification, vote).
# An unmatched property is outside the quorum whatever happened; a frozen one is excluded
# whatever it did ("a freeze never appears in the vote-yes row").
VOTE_TABLE = {}
for _outcome in RUNS:
    VOTE_TABLE[(False, False, _outcome)] = ("not_run", "not_voting")
    VOTE_TABLE[(False, True, _outcome)] = ("not_run", "not_voting")
    VOTE_TABLE[(True, True, _outcome)] = (_outcome, "excluded")
VOTE_TABLE[(True, False, "pass")] = ("pass", "yes")
VOTE_TABLE[(True, False, "fail")] = ("fail", "no")
VOTE_TABLE[(True, False, "flake")] = ("flake", "no")


# A full strong pass matches every strong property and no weak one, whatever the diff.
FULL_PASS_KINDS = [k for k in KINDS if k.matched == (k.strength == "strong")]


@dataclass(frozen=True)
class Case:
    kinds: tuple[Kind, ...]
    drift: bool
    debt: str  # "under", "at" or "over"
    full_pass: bool = False


def oracle(case: Case) -> set[str]:
    """Every decision whose rule applies to the case (promote is what remains)."""
    matched = [k for k in case.kinds if k.matched]
    matched_strong = [k for k in matched if k.strength == "strong"]
    live = [k for k in matched if not k.frozen]
    applies = {
        # "open count above cap": only the 'over' ledgers exceed it; 'at' is equal.
        "stop_queue": case.debt == "over",
        # "any / mismatch / any": a drifted tree the diff did not touch.
        "fixture_fault": case.drift,
        # The overlap with strong localities is empty, or a touched path lies only in a
        # weak locality (each kind's path is in its own locality alone): no one votes on it.
        # A full strong pass has no diff to overlap.
        "review": not case.full_pass
        and (not matched_strong or any(k.strength == "weak" for k in matched)),
        "reject": (
            any(k.strength == "strong" and k.outcome == "fail" for k in live)
            or (bool(matched_strong) and all(k.frozen for k in matched_strong))
            or any(k.strength == "weak" and k.outcome == "fail" for k in live)
            # A full pass over a catalog with no strong property: an empty quorum.
            or (case.full_pass and not matched_strong)
        ),
        "hold": any(k.outcome == "flake" for k in live),
    }
    return {decision for decision, fired in applies.items() if fired}


def build(case: Case) -> GateInputs:
    catalog = []
    paths = []
    outcomes = {}
    ledger = []
    counts = {}
    seals = []
    for i, kind in enumerate(case.kinds):
        pid = f"p{i}"
        catalog.append(
            PropertySpec(
                pid,
                kind.strength,
                (f"mod{i}",),
                fixture_roots=(f"fixtures/p{i}",),
                predicate_srcs=(f"mod{i}/tests/p{i}_test.py",),
                package=f"mod{i}",
            )
        )
        seals.append(
            FixtureSeal(
                agent_gate_pb2.FixtureTree(root=f"fixtures/p{i}", seal_file=f"fixtures/p{i}.seal"),
                f"s{i}",
                f"s{i}",
            )
        )
        outcomes[pid] = RunOutcome(RUNS[kind.outcome])
        if kind.matched and not case.full_pass:
            paths.append(f"mod{i}/code.py")
        if kind.frozen:
            ledger.append(LedgerRow(pid, "open", f"c{i}", 30, "owner"))
            counts[f"c{i}"] = 1
    frozen = sum(k.frozen for k in case.kinds)
    cap = {"under": 5, "at": frozen, "over": frozen + 1}[case.debt]
    if case.debt == "over":
        # An untouched property whose freeze has an unknown commit count: two rows of debt.
        catalog.append(PropertySpec("pad", "weak", ("pad",)))
        ledger.append(LedgerRow("pad", "open", "lost-commit", 30, "owner"))
    if case.drift:
        seals.append(
            FixtureSeal(
                agent_gate_pb2.FixtureTree(root="fixtures/drift", seal_file="fixtures/drift.seal"),
                "old",
                "new",
            )
        )
    return GateInputs(
        catalog=tuple(catalog),
        changed_paths=tuple(paths),
        outcomes=outcomes,
        fixtures=tuple(seals),
        ledger=tuple(ledger),
        commit_counts=counts,
        debt_cap=cap,
        ledger_path="ledger.txtpb",
        gate_package="",
        rule_set_paths=("rules", "tools", "proto"),
        full_pass=case.full_pass,
    )


def all_cases():
    for full_pass, kinds_of in ((False, KINDS), (True, FULL_PASS_KINDS)):
        for size in range(4):
            for kinds in itertools.product(kinds_of, repeat=size):
                for drift in (False, True):
                    for debt in ("under", "at", "over"):
                        yield Case(kinds, drift, debt, full_pass)


class ExhaustiveTest(absltest.TestCase):
    def test_every_catalog_of_up_to_three_properties(self):
        checked = 0
        seen = set()
        for case in all_cases():
            report = evaluate(build(case))
            fired = oracle(case)
            expected = min(fired | {"promote"}, key=RANK.__getitem__)
            context = f"{case}: {list(report.reasons)}"
            self.assertEqual(report.decision, expected, context)
            listed = [reason.split(":", 1)[0] for reason in report.reasons]
            self.assertEqual(listed[0], report.decision, context)
            # Every rule that fired is listed, and nothing else.
            self.assertEqual(set(listed), fired or {"promote"}, context)
            self.assertEqual(listed, sorted(listed, key=RANK.__getitem__), context)
            self.assertEqual(report.rule, report.reasons[0], context)
            self.assertEmpty(report.errors, context)
            self.assertEmpty(report.guarded_paths, context)
            weak_paths = [
                f"mod{i}/code.py"
                for i, kind in enumerate(case.kinds)
                if kind.matched and kind.strength == "weak" and not case.full_pass
            ]
            self.assertEqual(list(report.unobserved_paths), weak_paths, context)
            self.check_rows(case, report)
            self.check_invariants(report)
            seen.add((case.full_pass, report.decision))
            checked += 1
        full_pass_cases = (12**3 + 12**2 + 12 + 1) * 6
        self.assertEqual(checked, (24**3 + 24**2 + 24 + 1) * 6 + full_pass_cases)
        self.assertEqual({d for full, d in seen if not full}, set(RANK))
        # A full pass has no diff: no review unless its inputs are broken.
        self.assertEqual({d for full, d in seen if full}, set(RANK) - {"review"})

    def check_rows(self, case, report):
        rows = [r for r in report.rows if r.property_id != "pad"]
        self.assertLen(rows, len(case.kinds))
        for i, (kind, row) in enumerate(zip(case.kinds, rows, strict=True)):
            context = f"{case}: row {i}"
            classification, vote = VOTE_TABLE[(kind.matched, kind.frozen, kind.outcome)]
            self.assertEqual(row.property_id, f"p{i}", context)
            self.assertEqual(row.strength, kind.strength, context)
            self.assertEqual(row.matched, kind.matched, context)
            matched_by = "(full strong pass)" if case.full_pass else f"mod{i}/code.py"
            self.assertEqual(row.matched_by, matched_by if kind.matched else "", context)
            self.assertEqual(row.classification, classification, context)
            self.assertEqual(row.vote, vote, context)
            self.assertEqual(row.ledger_state, "open" if kind.frozen else "", context)
            self.assertEqual(row.seal_status, "match", context)
            runs = list(RUNS[kind.outcome]) if kind.matched else []
            self.assertEqual(list(row.exit_codes), runs, context)

    def check_invariants(self, report):
        for row in report.rows:
            if row.vote == "excluded" or row.ledger_state == "open":
                self.assertNotEqual(row.vote, "yes", row)
            if not row.matched:
                self.assertTrue(row.vote == "not_voting", row)
        if report.decision != "promote":
            return
        strong = [r for r in report.rows if r.strength == "strong" and r.matched]
        voting = [r for r in strong if r.vote != "excluded"]
        self.assertNotEmpty(voting, report)
        for row in voting:
            self.assertEqual((row.vote, row.classification), ("yes", "pass"), row)
            self.assertEqual(list(row.exit_codes), [0, 0], row)
        for row in report.rows:
            if row.strength == "weak" and row.matched and row.vote != "excluded":
                self.assertNotIn(row.classification, ("fail", "flake"), row)
        self.assertLessEqual(report.debt, report.debt_cap)
        self.assertFalse(any(f.status != "match" for f in report.fixtures), report)


if __name__ == "__main__":
    absltest.main()
