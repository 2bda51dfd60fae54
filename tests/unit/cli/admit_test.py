"""The verdicts of `agent-gate admit`: which half failed, and which mutants are refused."""

from dataclasses import replace

from absl.testing import absltest

from agent_gate.cli import admit, catalog
from agent_gate.core import quorum
from proto import agent_gate_pb2

SEAL = "4d35dc6079d8a087e61b4adfd265ae7f3e58f61073ed6026a3100f3862908307"
SPEC = quorum.PropertySpec(
    id="resp.no_secret_fields",
    strength="strong",
    locality=("api/handlers", "api/serializers"),
    fixture_roots=("fixtures/responses",),
    predicate_srcs=("api/tests/no_secret_fields_test.py",),
)


def _result(first: int, second: int, seal: str = SEAL) -> agent_gate_pb2.RunResult:
    result = agent_gate_pb2.RunResult(property_id=SPEC.id, run_id="r")
    for number, code in ((1, first), (2, second)):
        result.runs.add(
            run_number=number, exit_code=code, fixture_seal_before=seal, fixture_seal_after=seal
        )
    return result


class CleanHalfTest(absltest.TestCase):
    def test_must_pass_twice(self):
        self.assertIsNone(admit.clean_problem(_result(0, 0)))
        for first, second, word in ((1, 1, "fail"), (0, 1, "flake")):
            problem = admit.clean_problem(_result(first, second))
            self.assertStartsWith(problem, "clean half failed")
            self.assertIn(word, problem)


class MutantHalfTest(absltest.TestCase):
    def test_must_fail_twice_stably_on_the_same_seal(self):
        self.assertIsNone(admit.mutant_problem(_result(1, 1), SEAL))
        self.assertIsNone(admit.mutant_problem(_result(-11, -11), SEAL))
        still = admit.mutant_problem(_result(0, 0), SEAL)
        self.assertStartsWith(still, "mutant half failed")
        self.assertIn("still passes twice", still)
        split = admit.mutant_problem(_result(1, 2), SEAL)
        self.assertIn("split", split)
        other = admit.mutant_problem(_result(1, 1, seal="f" * 64), SEAL)
        self.assertIn("did not see the fixture seal", other)


OTHER = quorum.PropertySpec(
    id="counter.monotonic",
    strength="strong",
    locality=("store/counters",),
    predicate_srcs=("store/tests/monotonic_test.py",),
    package="store",
    test_packages=("store/tests",),
)
CATALOG = catalog.Catalog(
    gate_label="//:agent_gate",
    gate_package="",
    properties=(replace(SPEC, package="api", test_packages=("api/tests",)), OTHER),
    fixtures=(
        agent_gate_pb2.FixtureTree(
            root="fixtures/responses", seal_file="fixtures/responses/responses.seal"
        ),
    ),
    ledger_path="ledger.txtpb",
    debt_cap=5,
    rule_set_paths=("rules",),
    admission_mutants={},
)


class GuardTest(absltest.TestCase):
    def test_a_mutant_may_only_change_the_code_the_property_observes(self):
        spec = CATALOG.get(SPEC.id)
        self.assertIsNone(admit.guard_problem(CATALOG, spec, ["api/serializers/user.py"]))
        for path in (
            "fixtures/responses/users.json",
            "fixtures/responses/responses.seal",
            "api/tests/no_secret_fields_test.py",
            # A helper beside the test, the test's BUILD file, the catalog's BUILD file.
            "api/tests/helpers.py",
            "api/tests/BUILD.bazel",
            "api/BUILD",
            "BUILD.bazel",
            # The gate's guards hold for the other rows too, and outside the locality.
            "store/tests/monotonic_test.py",
            "store/counters/counter.py",
            "ledger.txtpb",
            "rules/defs.bzl",
        ):
            with self.subTest(path=path):
                problem = admit.guard_problem(CATALOG, spec, ["api/serializers/x.py", path])
                self.assertIsNotNone(problem)
                self.assertIn(path, problem)
                self.assertStartsWith(problem, "mutant half refused")

    def test_verdict_line(self):
        verdict = admit.Verdict(SPEC.id, "m.patch", False, "mutant half failed: x")
        self.assertEqual(
            verdict.line(),
            "not admitted: resp.no_secret_fields with mutant m.patch: mutant half failed: x",
        )


if __name__ == "__main__":
    absltest.main()
