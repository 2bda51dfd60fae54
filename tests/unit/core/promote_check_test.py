"""promote_check: a promote report that contradicts itself is caught, field by field."""

from absl.testing import absltest

from agent_gate.core.promote_check import promote_problems
from agent_gate.core.quorum import FixtureSeal, GateInputs, PropertySpec, RunOutcome, evaluate
from proto import agent_gate_pb2

CATALOG = (
    PropertySpec("s", "strong", ("src",), fixture_roots=("fx",)),
    PropertySpec("w", "weak", ("src",)),
)


def honest_promote():
    report = evaluate(
        GateInputs(
            catalog=CATALOG,
            changed_paths=("src/a.py",),
            outcomes={"s": RunOutcome((0, 0)), "w": RunOutcome((0, 0))},
            fixtures=(
                FixtureSeal(agent_gate_pb2.FixtureTree(root="fx", seal_file="fx.seal"), "aa", "aa"),
            ),
            run_id="r",
        )
    )
    assert report.decision == "promote", list(report.reasons)
    return report


def rows(report):
    return {row.property_id: row for row in report.rows}


class PromoteCheckTest(absltest.TestCase):
    def test_an_honest_promote_has_no_problem(self):
        self.assertEqual(promote_problems(honest_promote()), [])

    def test_other_decisions_are_not_checked(self):
        report = honest_promote()
        report.decision = "reject"
        report.errors.append("x")
        self.assertEqual(promote_problems(report), [])

    def test_every_forgery_is_named(self):
        forgeries = {
            "configuration error": lambda r: r.errors.append("x"),
            "guarded paths": lambda r: r.guarded_paths.append("ledger.txtpb (the ledger)"),
            "unobserved paths": lambda r: r.unobserved_paths.append(".github/ci.yml"),
            "unsandboxed targets": lambda r: r.unsandboxed_targets.append("//a:gen"),
            "other than promote": lambda r: r.reasons.append("reject: strong s failed"),
            "exceeds the cap": lambda r: setattr(r, "debt", r.debt_cap + 1),
            "fixture tree fx": lambda r: setattr(r.fixtures[0], "status", "mismatch"),
            "strong property s is fail": lambda r: (
                setattr(rows(r)["s"], "classification", "fail"),
                rows(r)["s"].exit_codes.__setitem__(slice(None), [1, 1]),
            ),
            "weak property w is flake": lambda r: setattr(rows(r)["w"], "classification", "flake"),
            "voted 'no'": lambda r: setattr(rows(r)["s"], "vote", "no"),
            "quorum is empty": lambda r: setattr(rows(r)["s"], "vote", "excluded"),
            "saw seal touched": lambda r: setattr(rows(r)["s"], "seal_status", "touched"),
        }
        for needle, forge in forgeries.items():
            with self.subTest(forgery=needle):
                report = honest_promote()
                forge(report)
                problems = promote_problems(report)
                self.assertNotEmpty(problems)
                self.assertTrue(any(needle in problem for problem in problems), problems)


if __name__ == "__main__":
    absltest.main()
