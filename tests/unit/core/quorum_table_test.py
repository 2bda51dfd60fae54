"""Named tests for the quorum evaluator: one per row of docs/decision-table.md, then each
review guard, the run classification, the debt arithmetic and decision precedence."""

import itertools
from dataclasses import replace

from absl.testing import absltest
from google.protobuf import json_format

from agent_gate.core.pathdigest import changed_paths_digest
from agent_gate.core.quorum import (
    PRECEDENCE,
    FixtureSeal,
    GateInputs,
    LedgerRow,
    Override,
    PropertySpec,
    RunOutcome,
    classify,
    evaluate,
)
from proto import agent_gate_pb2

PASS = RunOutcome((0, 0))
FAIL = RunOutcome((1, 1))
SPLIT = RunOutcome((0, 1))

SECRET = "resp.no_secret_fields"
KEYS = "resp.keys_present"
COUNTER = "counter.monotonic_under_replay"

# The catalog of docs/article.md, with the BUILD packages and predicate sources a repo has.
CATALOG = (
    PropertySpec(
        SECRET,
        "strong",
        ("api/handlers", "api/serializers"),
        fixture_roots=("fixtures/responses/",),
        predicate_srcs=("api/tests/no_secret_test.py",),
        package="api",
        label="//api:no_secret_fields",
    ),
    PropertySpec(
        KEYS,
        "weak",
        ("api/serializers",),
        fixture_roots=("fixtures/responses/",),
        predicate_srcs=("api/tests/keys_test.py",),
        package="api",
        label="//api:keys_present",
    ),
    PropertySpec(
        COUNTER,
        "strong",
        ("store/counters",),
        fixture_roots=("fixtures/replays/",),
        predicate_srcs=("store/tests/monotonic_test.py",),
        package="store",
        label="//store:monotonic_under_replay",
    ),
)
SEALS = (
    FixtureSeal(
        agent_gate_pb2.FixtureTree(root="fixtures/responses", seal_file="fixtures/responses.seal"),
        "aa",
        "aa",
    ),
    FixtureSeal(
        agent_gate_pb2.FixtureTree(root="fixtures/replays", seal_file="fixtures/replays.seal"),
        "bb",
        "bb",
    ),
)
DRIFTED = (
    SEALS[0],
    FixtureSeal(
        agent_gate_pb2.FixtureTree(root="fixtures/replays", seal_file="fixtures/replays.seal"),
        "bb",
        "cc",
    ),
)


def gate(
    paths,
    outcomes=None,
    catalog=CATALOG,
    ledger=(),
    commit_counts=None,
    **kwargs,
):
    """Evaluate the repo of docs/article.md with sensible defaults; outcomes default to pass."""
    if outcomes is None:
        outcomes = {spec.id: PASS for spec in catalog}
    if commit_counts is None:
        commit_counts = {row.opened_against_commit: 0 for row in ledger}
    inputs = GateInputs(
        catalog=catalog,
        changed_paths=tuple(paths),
        outcomes=outcomes,
        fixtures=kwargs.pop("fixtures", SEALS),
        ledger=tuple(ledger),
        commit_counts=commit_counts,
        ledger_path=kwargs.pop("ledger_path", "ledger.txtpb"),
        gate_package=kwargs.pop("gate_package", ""),
        rule_set_paths=kwargs.pop("rule_set_paths", ("rules", "tools", "proto", "MODULE.bazel")),
        **kwargs,
    )
    return evaluate(inputs)


def freeze(property_id, budget=30, commit="c0ffee", state="open"):
    return LedgerRow(property_id, state, commit, budget, "unassigned")


def row(report, property_id):
    (found,) = [r for r in report.rows if r.property_id == property_id]
    return found


def decisions(report):
    return [reason.split(":", 1)[0] for reason in report.reasons]


class TableRowTest(absltest.TestCase):
    """One test per row of "Wire the job to one table"."""

    def test_pass_pass_not_listed_votes_yes_and_promotes(self):
        report = gate(["store/counters/inc.py"])
        self.assertEqual(report.decision, "promote")
        self.assertEqual(decisions(report), ["promote"])
        counter = row(report, COUNTER)
        self.assertTrue(counter.matched)
        self.assertEqual(counter.matched_by, "store/counters/inc.py")
        self.assertEqual(counter.classification, "pass")
        self.assertEqual(counter.vote, "yes")
        self.assertEqual(list(counter.exit_codes), [0, 0])
        self.assertEqual(counter.seal_status, "match")
        self.assertEqual(counter.ledger_state, "")
        self.assertEqual(counter.label, "//store:monotonic_under_replay")
        self.assertIn(COUNTER, report.rule)
        for other in (SECRET, KEYS):
            self.assertEqual(row(report, other).vote, "not_voting")
            self.assertEqual(row(report, other).classification, "not_run")
        self.assertEqual([r.property_id for r in report.rows], [SECRET, KEYS, COUNTER])

    def test_fail_fail_rejects_and_says_do_not_freeze(self):
        report = gate(["store/counters/inc.py"], {COUNTER: FAIL})
        self.assertEqual(report.decision, "reject")
        self.assertIn(COUNTER, report.rule)
        self.assertIn("failed twice", report.rule)
        self.assertIn("exit 1, 1", report.rule)
        self.assertIn("do not freeze", report.rule)
        self.assertEqual(row(report, COUNTER).classification, "fail")
        self.assertEqual(row(report, COUNTER).vote, "no")

    def test_fail_rule_text_names_row_property_and_exits(self):
        catalog = (PropertySpec("counter.x", "strong", ("store/counters",)),)
        report = gate(["store/counters/inc.py"], {"counter.x": FAIL}, catalog=catalog)
        self.assertEqual(
            report.rule, "reject: strong property counter.x failed twice (exit 1, 1); do not freeze"
        )
        catalog += (PropertySpec("counter.y", "strong", ("store/counters",)),)
        outcomes = {"counter.x": FAIL, "counter.y": RunOutcome((2, 2))}
        report = gate(["store/counters/inc.py"], outcomes, catalog=catalog)
        self.assertIn(
            "strong properties counter.x failed twice (exit 1, 1), counter.y", report.rule
        )

    def test_split_exits_hold(self):
        report = gate(["store/counters/inc.py"], {COUNTER: SPLIT})
        self.assertEqual(report.decision, "hold")
        self.assertIn(COUNTER, report.rule)
        self.assertIn("exit 0, 1", report.rule)
        self.assertIn("same seal", report.rule)
        self.assertEqual(row(report, COUNTER).classification, "flake")
        self.assertEqual(row(report, COUNTER).vote, "no")

    def test_seal_mismatch_is_fixture_fault_with_any_ledger(self):
        ledgers = {
            "none": (),
            "open": (freeze(COUNTER),),
            "retired": (freeze(COUNTER, state="retired"),),
            "over cap": tuple(freeze(p) for p in (SECRET, KEYS)),
        }
        for (name, ledger), outcome in itertools.product(ledgers.items(), (PASS, FAIL, SPLIT)):
            with self.subTest(ledger=name, outcome=outcome):
                report = gate(
                    ["store/counters/inc.py"], {COUNTER: outcome}, ledger=ledger, fixtures=DRIFTED
                )
                self.assertEqual(report.decision, "fixture_fault")
                self.assertIn("fixtures/replays", report.rule)
                self.assertIn("no freeze", report.rule)
                self.assertEqual(row(report, COUNTER).seal_status, "mismatch")
                self.assertEqual(
                    [f.status for f in report.fixtures], ["match", "mismatch"], report.fixtures
                )

    def test_pass_pass_with_open_freeze_is_excluded_not_a_pass(self):
        report = gate(["store/counters/inc.py", "api/handlers/user.py"], ledger=(freeze(COUNTER),))
        counter = row(report, COUNTER)
        self.assertEqual(counter.classification, "pass")
        self.assertEqual(counter.vote, "excluded")
        self.assertEqual(counter.ledger_state, "open")
        self.assertIn("excluded", counter.note)
        self.assertIn("not a pass", counter.note)
        # The other strong property still votes, so this patch may promote, but the
        # report must name the freeze as excluded, not passed.
        self.assertEqual(report.decision, "promote")
        self.assertIn("excluded", report.rule)
        self.assertNotIn(COUNTER, report.rule.split(";")[0])

    def test_open_count_above_cap_stops_queue_even_for_unrelated_patch(self):
        idle = tuple(PropertySpec(f"idle.{i}", "weak", (f"idle/{i}",)) for i in range(6))
        report = gate(
            ["api/handlers/user.py"],
            catalog=CATALOG + idle,
            ledger=tuple(freeze(spec.id) for spec in idle),
        )
        self.assertEqual(report.decision, "stop_queue")
        self.assertEqual(report.debt, 6)
        self.assertEqual(report.debt_cap, 5)
        self.assertIn("6", report.rule)
        self.assertIn("debt cap 5", report.rule)
        self.assertEqual(row(report, SECRET).vote, "yes")
        self.assertEqual(decisions(report), ["stop_queue"])

    def test_all_matched_strong_open_rejects_empty_quorum(self):
        report = gate(
            ["store/counters/inc.py", "api/serializers/user.py"],
            ledger=(freeze(COUNTER), freeze(SECRET)),
        )
        self.assertEqual(report.decision, "reject")
        self.assertIn("empty strong quorum", report.rule)
        self.assertEqual(row(report, COUNTER).vote, "excluded")
        self.assertEqual(row(report, SECRET).vote, "excluded")
        # The weak pass is a yes, and still never fills the strong gap.
        self.assertEqual(row(report, KEYS).vote, "yes")

    def test_no_table_row_puts_a_freeze_in_the_vote_yes_row(self):
        for outcome in (PASS, FAIL, SPLIT):
            report = gate(["store/counters/x.py"], {COUNTER: outcome}, ledger=(freeze(COUNTER),))
            self.assertEqual(row(report, COUNTER).vote, "excluded")
            self.assertEqual(report.decision, "reject")


class ReviewGuardTest(absltest.TestCase):
    def assert_guarded(self, report, path, why):
        self.assertEqual(report.decision, "review", report.reasons)
        entries = [g for g in report.guarded_paths if g.startswith(path + " (")]
        self.assertLen(entries, 1, report.guarded_paths)
        self.assertIn(why, entries[0])
        self.assertIn(path, report.rule)

    def test_no_strong_overlap(self):
        report = gate(["docs/readme.md"])
        self.assertEqual(report.decision, "review")
        self.assertIn("no strong property", report.rule)
        self.assertEmpty(report.guarded_paths)

    def test_empty_diff_is_no_overlap(self):
        report = gate([])
        self.assertEqual(report.decision, "review")
        self.assertIn("no strong property", report.rule)
        self.assertEqual(report.changed_path_count, 0)

    def test_fixture_path(self):
        report = gate(["store/counters/inc.py", "fixtures/replays/day1.json"], fixtures=DRIFTED)
        self.assert_guarded(report, "fixtures/replays/day1.json", "fixture tree fixtures/replays")
        self.assertEqual(row(report, COUNTER).seal_status, "touched")
        # Touching the fixtures is review, never a fixture fault.
        self.assertEqual([f.status for f in report.fixtures], ["match", "touched"])

    def test_seal_file(self):
        report = gate(["store/counters/inc.py", "fixtures/replays.seal"])
        self.assert_guarded(report, "fixtures/replays.seal", "seal file of fixtures/replays")
        self.assertEqual(row(report, COUNTER).seal_status, "touched")

    def test_ledger(self):
        report = gate(["store/counters/inc.py", "ledger.txtpb"])
        self.assert_guarded(report, "ledger.txtpb", "ledger")

    def test_gate_build_file(self):
        report = gate(["store/counters/inc.py", "BUILD.bazel"])
        self.assert_guarded(report, "BUILD.bazel", "agent_gate target")
        report = gate(["store/counters/inc.py", "ci/BUILD"], gate_package="ci")
        self.assert_guarded(report, "ci/BUILD", "agent_gate target")
        # Only the BUILD file directly in the package is the gate's configuration (the
        # other is review only because unobserved_ok never excuses a BUILD file).
        report = gate(
            ["store/counters/inc.py", "ci/sub/BUILD"], gate_package="ci", unobserved_ok=("ci",)
        )
        self.assertLen(report.guarded_paths, 1)
        self.assertNotIn("agent_gate target", report.guarded_paths[0])
        self.assertIn("under unobserved_ok", report.guarded_paths[0])

    def test_property_build_file(self):
        report = gate(["store/counters/inc.py", "store/BUILD.bazel"])
        self.assert_guarded(report, "store/BUILD.bazel", f"defining property {COUNTER}")
        # The BUILD file of an unmatched property's package is guarded too: it is a catalog row.
        report = gate(["store/counters/inc.py", "api/BUILD"])
        self.assert_guarded(report, "api/BUILD", SECRET)

    def test_matched_predicate_src(self):
        report = gate(["store/counters/inc.py", "store/tests/monotonic_test.py"])
        self.assert_guarded(
            report, "store/tests/monotonic_test.py", f"predicate source of {COUNTER}"
        )

    def test_unmatched_predicate_src(self):
        # Gutting an unmatched predicate now would let the next patch break what it observed.
        report = gate(["store/counters/inc.py", "api/tests/keys_test.py"])
        self.assert_guarded(report, "api/tests/keys_test.py", f"predicate source of {KEYS}")
        self.assertFalse(row(report, KEYS).matched)

    def test_test_build_file(self):
        catalog = (replace(CATALOG[2], test_packages=("store/tests",)),)
        for path in ("store/tests/BUILD.bazel", "store/tests/BUILD"):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path], catalog=catalog)
                self.assert_guarded(report, path, f"declaring the test of {COUNTER}")
        # A BUILD file of another package declares no test of the catalog (it is review
        # only because unobserved_ok never excuses a BUILD file).
        report = gate(
            ["store/counters/inc.py", "lib/BUILD"], catalog=catalog, unobserved_ok=("lib",)
        )
        self.assertLen(report.guarded_paths, 1)
        self.assertNotIn("declaring the test", report.guarded_paths[0])
        self.assertIn("under unobserved_ok", report.guarded_paths[0])

    def test_import_hooks_anywhere(self):
        for path in (
            "store/counters/sitecustomize.py",
            "usercustomize.py",
            "store/counters/conftest.py",
            "store/counters/zzz.pth",
            "store/counters/pytest.ini",
            "store/counters/META-INF/services/org.example.Plugin",
        ):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path], unobserved_ok=("usercustomize.py",))
                self.assert_guarded(report, path, "import hook")
        report = gate(["store/counters/inc.py", "store/counters/conftest_data.py"])
        self.assertEqual(report.decision, "promote", list(report.reasons))

    def test_bazel_configuration_anywhere(self):
        # Inside a strong locality too: no vote can cover what reconfigures Bazel.
        paths = (
            "store/counters/deps.MODULE.bazel",
            "x.MODULE.bazel",
            "store/counters/.bazelrc",
            "store/counters/ci.bazelrc",
            "store/counters/.bazelversion",
            "store/counters/WORKSPACE.bazel",
            "store/counters/tools/bazel",
            "store/counters/REPO.bazel",
        )
        for path in paths:
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path], unobserved_ok=("x.MODULE.bazel",))
                self.assert_guarded(report, path, "Bazel configuration")
        near_misses = (
            "store/counters/MODULE.md",
            "store/counters/bazel_tools.py",
            "store/counters/tools/bazel.md",
        )
        for path in near_misses:
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path])
                self.assertEqual(report.decision, "promote", list(report.reasons))

    def test_rule_set_path(self):
        for path in ("rules/private/impl.bzl", "tools/agent_gate/core/quorum.py", "MODULE.bazel"):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path])
                self.assert_guarded(report, path, "rule set")
        report = gate(["store/counters/inc.py", "rules_extra/x.py"], unobserved_ok=("rules_extra",))
        self.assertEqual(report.decision, "promote")

    def test_one_entry_per_path_with_every_reason(self):
        report = gate(
            ["store/counters/inc.py", "store/BUILD", "store/BUILD"],
            catalog=(replace(CATALOG[2], predicate_srcs=("store/BUILD",)),),
            gate_package="store",
        )
        self.assertLen(report.guarded_paths, 1)
        for why in ("predicate source", "agent_gate target", "defining property"):
            self.assertIn(why, report.guarded_paths[0])

    def test_configuration_errors_fail_closed(self):
        report = gate(["store/counters/inc.py"], errors=("ledger.txtpb:3: bad field",))
        self.assertEqual(report.decision, "review")
        self.assertIn("ledger.txtpb:3: bad field", report.rule)
        self.assertEqual(list(report.errors), ["ledger.txtpb:3: bad field"])

    def test_matched_property_without_outcome_is_an_error(self):
        report = gate(["store/counters/inc.py"], outcomes={})
        self.assertEqual(report.decision, "review")
        self.assertEqual(row(report, COUNTER).classification, "error")
        self.assertEqual(row(report, COUNTER).vote, "no")
        self.assertLen(report.errors, 1)
        self.assertIn(COUNTER, report.errors[0])

    def test_bad_changed_paths_are_errors(self):
        for path in ("/etc/passwd", "store/../../x", "../x"):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path])
                self.assertEqual(report.decision, "review")
                self.assertIn(path, report.errors[0])
                self.assertEqual(list(report.changed_paths), ["store/counters/inc.py", path])

    def test_unknown_seal_is_review_not_fixture_fault(self):
        for seal in (
            FixtureSeal(
                agent_gate_pb2.FixtureTree(
                    root="fixtures/replays", seal_file="fixtures/replays.seal"
                ),
                None,
                "bb",
            ),
            FixtureSeal(
                agent_gate_pb2.FixtureTree(
                    root="fixtures/replays", seal_file="fixtures/replays.seal"
                ),
                "bb",
                None,
            ),
        ):
            with self.subTest(seal=seal):
                report = gate(["store/counters/inc.py"], fixtures=(SEALS[0], seal))
                self.assertEqual(report.decision, "review")
                self.assertIn("fixtures/replays", report.errors[0])
                self.assertEqual(row(report, COUNTER).seal_status, "unknown")
                self.assertEqual(report.fixtures[1].status, "unknown")

    def test_matched_property_with_unsealed_fixture_root_is_an_error(self):
        report = gate(["store/counters/inc.py"], fixtures=SEALS[:1])
        self.assertEqual(report.decision, "review")
        self.assertEqual(row(report, COUNTER).seal_status, "unknown")
        self.assertIn("sealed_fixtures", report.errors[0])

    def test_fixture_root_inside_a_sealed_tree_uses_that_seal(self):
        catalog = (replace(CATALOG[2], fixture_roots=("fixtures/replays/day1",)),)
        report = gate(["store/counters/inc.py"], catalog=catalog)
        self.assertEqual(report.decision, "promote")
        self.assertEqual(row(report, COUNTER).seal_status, "match")
        report = gate(["store/counters/inc.py"], catalog=catalog, fixtures=DRIFTED)
        self.assertEqual(report.decision, "fixture_fault")
        self.assertEqual(row(report, COUNTER).seal_status, "mismatch")
        report = gate(["store/counters/inc.py", "fixtures/replays.seal"], catalog=catalog)
        self.assertEqual(row(report, COUNTER).seal_status, "touched")

    def test_ledger_row_for_unknown_property_is_an_error(self):
        report = gate(["store/counters/inc.py"], ledger=(freeze("no.such.property"),))
        self.assertEqual(report.decision, "review")
        self.assertIn("no.such.property", report.errors[0])

    def test_repeated_open_row_is_an_error(self):
        report = gate(
            ["store/counters/inc.py", "api/handlers/a.py"],
            ledger=(freeze(COUNTER), freeze(COUNTER)),
        )
        self.assertEqual(report.decision, "review")
        self.assertIn("more than one open row", report.errors[0])


class WeakPropertyTest(absltest.TestCase):
    def test_weak_fail_rejects(self):
        report = gate(["api/serializers/user.py"], {SECRET: PASS, KEYS: FAIL})
        self.assertEqual(report.decision, "reject")
        self.assertIn("weak", report.rule)
        self.assertIn(KEYS, report.rule)
        self.assertEqual(row(report, KEYS).vote, "no")

    def test_weak_flake_holds(self):
        report = gate(["api/serializers/user.py"], {SECRET: PASS, KEYS: SPLIT})
        self.assertEqual(report.decision, "hold")
        self.assertIn(KEYS, report.rule)

    def test_weak_pass_never_fills_a_strong_gap(self):
        catalog = (*CATALOG, PropertySpec("web.shape", "weak", ("web",)))
        report = gate(["web/ui/app.ts"], catalog=catalog)
        self.assertEqual(report.decision, "review")
        self.assertEqual(row(report, "web.shape").vote, "yes")
        self.assertIn("no strong property", report.rule)

    def test_frozen_weak_fail_is_excluded(self):
        report = gate(
            ["api/serializers/user.py"], {SECRET: PASS, KEYS: FAIL}, ledger=(freeze(KEYS),)
        )
        self.assertEqual(report.decision, "promote")
        self.assertEqual(row(report, KEYS).vote, "excluded")


class ClassifyTest(absltest.TestCase):
    def test_literal_reading(self):
        cases = [
            (RunOutcome((0, 0)), "pass"),
            (RunOutcome((1, 1)), "fail"),
            (RunOutcome((0, 1)), "flake"),
            (RunOutcome((1, 0)), "flake"),
            (RunOutcome((1, 2)), "flake"),
            (RunOutcome((-9, -9)), "fail"),
            (RunOutcome((-9, -15)), "flake"),
            (RunOutcome((-11, 0)), "flake"),
            (RunOutcome((0, -9), (False, True)), "flake"),
            (RunOutcome((-9, 0), (True, False)), "flake"),
            (RunOutcome((1, -9), (False, True)), "flake"),
            (RunOutcome((0, 0), (True, False)), "flake"),
            (RunOutcome((-9, -9), (True, True)), "fail"),
            (RunOutcome((-9, -15), (True, True)), "fail"),
        ]
        for outcome, expected in cases:
            with self.subTest(outcome=outcome):
                self.assertEqual(classify(outcome), expected)

    def test_one_timeout_is_a_flake(self):
        report = gate(["store/counters/x.py"], {COUNTER: RunOutcome((0, -9), (False, True))})
        self.assertEqual(report.decision, "hold")
        self.assertIn("timeout", report.rule)

    def test_two_timeouts_are_a_fail(self):
        report = gate(["store/counters/x.py"], {COUNTER: RunOutcome((-9, -9), (True, True))})
        self.assertEqual(report.decision, "reject")
        self.assertIn("timeout, timeout", report.rule)

    def test_unequal_non_zero_is_a_flake(self):
        report = gate(["store/counters/x.py"], {COUNTER: RunOutcome((1, 2))})
        self.assertEqual(report.decision, "hold")
        self.assertEqual(list(row(report, COUNTER).exit_codes), [1, 2])

    def test_signal_codes(self):
        report = gate(["store/counters/x.py"], {COUNTER: RunOutcome((-11, -11))})
        self.assertEqual(report.decision, "reject")
        self.assertEqual(list(row(report, COUNTER).exit_codes), [-11, -11])
        self.assertIn("exit -11, -11", report.rule)
        report = gate(["store/counters/x.py"], {COUNTER: RunOutcome((-11, -6))})
        self.assertEqual(report.decision, "hold")


class DebtTest(absltest.TestCase):
    # Three properties nobody touches, so the ledger only feeds the debt.
    IDLE = tuple(PropertySpec(f"idle.{i}", "weak", (f"idle/{i}",)) for i in range(4))
    PATHS = ("api/handlers/user.py",)

    def debt_gate(self, ledger, commit_counts, debt_cap, **kwargs):
        return gate(
            self.PATHS,
            catalog=CATALOG + self.IDLE,
            ledger=ledger,
            commit_counts=commit_counts,
            debt_cap=debt_cap,
            **kwargs,
        )

    def test_debt_equal_to_cap_is_not_stop_queue(self):
        ledger = tuple(freeze(f"idle.{i}", commit=f"c{i}") for i in range(3))
        report = self.debt_gate(ledger, {"c0": 1, "c1": 2, "c2": 3}, debt_cap=3)
        self.assertEqual(report.debt, 3)
        self.assertEqual(report.decision, "promote")
        report = self.debt_gate(ledger, {"c0": 1, "c1": 2, "c2": 3}, debt_cap=2)
        self.assertEqual(report.decision, "stop_queue")

    def test_spent_budget_counts_double(self):
        ledger = (
            freeze("idle.0", budget=30, commit="c0"),
            freeze("idle.1", budget=30, commit="c1"),
        )
        report = self.debt_gate(ledger, {"c0": 30, "c1": 29}, debt_cap=2)
        self.assertEqual(report.debt, 3)
        self.assertEqual(report.decision, "stop_queue")
        self.assertIn("idle.0 (30 of 30 commits)", report.rule)
        spent = {status.property_id: status.spent for status in report.ledger}
        self.assertEqual(spent, {"idle.0": True, "idle.1": False})
        self.assertEqual([s.commits_since_open for s in report.ledger], [30, 29])

    def test_unknown_commit_count_counts_as_spent(self):
        ledger = (freeze("idle.0", commit="c0"), freeze("idle.1", commit="gone"))
        report = self.debt_gate(ledger, {"c0": 1}, debt_cap=2)
        self.assertEqual(report.debt, 3)
        self.assertEqual(report.decision, "stop_queue")
        self.assertIn("unknown", report.rule)
        status = report.ledger[1]
        self.assertEqual(status.commits_since_open, -1)
        self.assertTrue(status.spent)

    def test_retired_rows_are_not_debt(self):
        ledger = (freeze("idle.0", state="retired"), freeze("idle.1", state="retired"))
        report = self.debt_gate(ledger, {}, debt_cap=0)
        self.assertEqual(report.debt, 0)
        self.assertEqual(report.decision, "promote")
        self.assertEqual([s.spent for s in report.ledger], [False, False])

    def test_override_removes_ids_from_debt(self):
        ledger = tuple(freeze(f"idle.{i}", commit=f"c{i}") for i in range(3))
        counts = {"c0": 0, "c1": 0, "c2": 0}
        override = Override(by="alice@example.com", ignored_ids=("idle.0", "idle.1"))
        report = self.debt_gate(ledger, counts, debt_cap=1, override=override)
        self.assertEqual(report.debt, 1)
        self.assertEqual(report.decision, "promote")
        self.assertEqual(report.override.by, "alice@example.com")
        self.assertEqual(list(report.override.ignored_ids), ["idle.0", "idle.1"])

    def test_overridden_row_still_excludes_its_property(self):
        override = Override(by="alice", ignored_ids=(COUNTER,))
        report = gate(
            ["store/counters/x.py"], ledger=(freeze(COUNTER),), debt_cap=0, override=override
        )
        self.assertEqual(report.debt, 0)
        self.assertEqual(row(report, COUNTER).vote, "excluded")
        self.assertEqual(report.decision, "reject")
        self.assertIn("empty strong quorum", report.rule)

    def test_unknown_override_id_is_an_error(self):
        ledger = (freeze("idle.0", commit="c0"),)
        override = Override(by="alice", ignored_ids=("idle.3",))
        report = self.debt_gate(ledger, {"c0": 0}, debt_cap=1, override=override)
        self.assertEqual(report.decision, "review")
        self.assertIn("idle.3", report.errors[0])
        # And it does not lower the debt: still stop_queue when over the cap.
        report = self.debt_gate(ledger, {"c0": 0}, debt_cap=0, override=override)
        self.assertEqual(report.decision, "stop_queue")
        self.assertEqual(decisions(report), ["stop_queue", "review"])

    def test_override_must_name_who(self):
        ledger = (freeze("idle.0", commit="c0"),)
        report = self.debt_gate(ledger, {"c0": 0}, 5, override=Override("", ("idle.0",)))
        self.assertEqual(report.decision, "review")


# The precedence of docs/decision-table.md, spelled out here so the test does not
# trust quorum.PRECEDENCE.
DOCUMENTED_ORDER = ("stop_queue", "fixture_fault", "review", "reject", "hold", "promote")


class VoterTest(absltest.TestCase):
    """Every touched path needs a strong voter; unsandboxed closures and lost paths are review."""

    def test_a_path_outside_every_strong_locality_is_review(self):
        report = gate(["store/counters/inc.py", ".github/workflows/ci.yml"])
        self.assertEqual(report.decision, "review")
        self.assertEqual(list(report.unobserved_paths), [".github/workflows/ci.yml"])
        self.assertIn(".github/workflows/ci.yml", report.rule)
        self.assertIn("no one votes", report.rule)
        # The strong property that did match still voted yes: the path alone blocks it.
        self.assertEqual(row(report, COUNTER).vote, "yes")

    def test_a_guarded_path_is_not_also_unobserved(self):
        report = gate(["store/counters/inc.py", "ledger.txtpb"])
        self.assertEqual(report.decision, "review")
        self.assertEmpty(report.unobserved_paths)
        self.assertLen(report.guarded_paths, 1)

    def test_a_weak_locality_never_fills_the_gap(self):
        catalog = (*CATALOG, PropertySpec("docs.links", "weak", ("docs",)))
        report = gate(["store/counters/inc.py", "docs/x.md"], catalog=catalog)
        self.assertEqual(report.decision, "review")
        self.assertEqual(list(report.unobserved_paths), ["docs/x.md"])
        self.assertEqual(row(report, "docs.links").vote, "yes")

    def test_unobserved_ok_needs_no_vote(self):
        report = gate(["store/counters/inc.py", "docs/x.md"], unobserved_ok=("docs/",))
        self.assertEqual(report.decision, "promote", list(report.reasons))
        self.assertEmpty(report.unobserved_paths)
        # Per path component: docs_v2 is not under docs.
        report = gate(["store/counters/inc.py", "docs_v2/x.md"], unobserved_ok=("docs",))
        self.assertEqual(list(report.unobserved_paths), ["docs_v2/x.md"])

    def test_a_patch_only_under_unobserved_ok_is_still_review(self):
        report = gate(["docs/x.md"], unobserved_ok=("docs",))
        self.assertEqual(report.decision, "review")
        self.assertEmpty(report.unobserved_paths)
        self.assertIn("no strong property's locality overlaps", report.rule)

    def test_a_bad_unobserved_ok_prefix_is_an_error(self):
        report = gate(["store/counters/inc.py"], unobserved_ok=("../x",))
        self.assertEqual(report.decision, "review")
        self.assertIn("unobserved_ok", report.errors[0])

    def test_unobserved_ok_never_excuses_what_a_test_reads(self):
        """A touched path at or below a package of some test's closure needs a strong voter."""
        # The counter's test reads docs/golden (its data); the secret test reads nothing there.
        catalog = tuple(
            replace(spec, touched_closure_packages=("docs/golden",)) if spec.id == COUNTER else spec
            for spec in CATALOG
        )
        for path in (
            "docs/golden/cases.json",  # a source file the test reads
            "docs/golden/deeper/BUILD",  # a new package that empties the test's glob
            "docs/golden/BUILD.bazel",
        ):
            with self.subTest(path=path):
                report = gate(["api/handlers/x.py", path], catalog=catalog, unobserved_ok=("docs",))
                self.assertEqual(report.decision, "review", list(report.reasons))
                self.assertLen(report.guarded_paths, 1)
                self.assertIn(path, report.guarded_paths[0])
                self.assertIn("'docs/golden'", report.guarded_paths[0])
                self.assertIn(COUNTER, report.guarded_paths[0])
        # Near misses: a sibling directory, a prefix that only looks alike.
        for path in ("docs/other.md", "docs/golden_v2/cases.json"):
            with self.subTest(path=path):
                report = gate(["api/handlers/x.py", path], catalog=catalog, unobserved_ok=("docs",))
                self.assertEqual(report.decision, "promote", list(report.reasons))

    def test_unobserved_ok_never_excuses_a_build_file(self):
        """An alias or a config_setting there redirects a test's data; no closure lists it."""
        for path in ("docs/BUILD.bazel", "docs/sub/BUILD", "docs/BUILD"):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path], unobserved_ok=("docs",))
                self.assertEqual(report.decision, "review", list(report.reasons))
                self.assertLen(report.guarded_paths, 1)
                self.assertIn(path, report.guarded_paths[0])
                self.assertIn("BUILD file under unobserved_ok", report.guarded_paths[0])
                self.assertEmpty(report.unobserved_paths)
        # Near misses: prose beside it, a name that only looks alike, and a BUILD file a
        # strong locality covers (product code, which that property votes on).
        for path, excused in (
            ("docs/README.md", ("docs",)),
            ("docs/BUILD.md", ("docs",)),
            ("store/counters/BUILD", ("store",)),
        ):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path], unobserved_ok=excused)
                self.assertEqual(report.decision, "promote", list(report.reasons))

    def test_a_closure_package_under_a_strong_locality_is_product_code(self):
        catalog = tuple(
            replace(spec, touched_closure_packages=("store/counters", ""))
            if spec.id == COUNTER
            else spec
            for spec in CATALOG
        )
        report = gate(["store/counters/inc.py"], catalog=catalog, unobserved_ok=("store",))
        self.assertEqual(report.decision, "promote", list(report.reasons))
        # The root package holds every path: a change under unobserved_ok is review.
        report = gate(
            ["store/counters/inc.py", "docs/x.md"], catalog=catalog, unobserved_ok=("docs",)
        )
        self.assertEqual(report.decision, "review")
        self.assertIn("package '' of the closure", report.guarded_paths[0])

    def test_a_generated_module_shadowing_what_a_matched_test_imports_is_review(self):
        """A genrule's `unittest.py` at an import root: no touched path is named like it."""
        generated = ("store/counters/unittest.py", "store/counters/os/__init__.py", "gen/ok.py")
        catalog = tuple(
            replace(spec, generated_modules=generated) if spec.id == COUNTER else spec
            for spec in CATALOG
        )
        report = gate(["store/counters/inc.py"], catalog=catalog)
        self.assertEqual(report.decision, "review", list(report.reasons))
        self.assertLen(report.guarded_paths, 2, report.guarded_paths)
        self.assertIn("'unittest'", report.guarded_paths[0])
        self.assertIn("'os'", report.guarded_paths[1])
        # Only a matched property's build runs: an unmatched one's modules do not count.
        report = gate(["api/handlers/x.py"], catalog=catalog)
        self.assertEqual(report.decision, "promote", list(report.reasons))

    def test_test_runner_configuration_is_review_anywhere(self):
        """pytest reads its options from these, in a locality too: `-k` deselects checks."""
        for path in (
            "store/counters/pyproject.toml",
            "store/counters/setup.cfg",
            "tox.ini",
            "api/handlers/.pytest.ini",
        ):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path], unobserved_ok=("tox.ini",))
                self.assertEqual(report.decision, "review", list(report.reasons))
                self.assertIn("test-runner configuration", report.guarded_paths[0])
        # Near misses: names that only look alike.
        for path in ("store/counters/pyproject.toml.orig", "store/counters/my_setup.cfg"):
            with self.subTest(path=path):
                self.assertEqual(gate(["store/counters/inc.py", path]).decision, "promote")

    def test_a_module_shadowing_what_a_test_imports_is_review(self):
        """`unittest.py` beside `imports = ["."]`: product code in the framework's place."""
        catalog = tuple(
            replace(spec, touched_import_roots=("store/counters", ""))
            if spec.id == COUNTER
            else spec
            for spec in CATALOG
        )
        for path, module in (
            ("store/counters/unittest.py", "unittest"),
            ("store/counters/os/__init__.py", "os"),
            ("store/counters/pytest.py", "pytest"),
            ("json.py", "json"),  # the repository's root is always on the path
            ("store/tests/unittest.py", "unittest"),  # beside the predicate: first on it
            ("google/__init__.py", "google"),
            # A namespace package: no __init__.py, merged ahead of the installed protobuf.
            ("store/counters/google/protobuf/message.py", "google"),
            ("google/protobuf/__init__.py", "google"),
        ):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path], catalog=catalog)
                self.assertEqual(report.decision, "review", list(report.reasons))
                shadow = [g for g in report.guarded_paths if f"module {module!r}" in g]
                self.assertLen(shadow, 1, report.guarded_paths)
                self.assertIn(COUNTER, shadow[0])
        # Near misses: a module of a package, not a top-level one; a name nobody imports;
        # a directory not on the path.
        for path in (
            "store/counters/unittest/helpers.py",
            "store/counters/inc_v2.py",
            "store/other/unittest.py",
        ):
            with self.subTest(path=path):
                report = gate(
                    ["store/counters/inc.py", path], catalog=catalog, unobserved_ok=("store",)
                )
                self.assertEmpty(
                    [g for g in report.guarded_paths if "shadows" in g], report.guarded_paths
                )

    def test_an_archive_on_a_tests_import_path_is_review(self):
        """`imports = ["vendor.zip"]`: Python imports every module in the archive as top-level."""
        catalog = tuple(
            replace(
                spec,
                touched_import_roots=("store/counters/vendor.zip", "store/counters/lib.zip/inner"),
            )
            if spec.id == COUNTER
            else spec
            for spec in CATALOG
        )
        for path in ("store/counters/vendor.zip", "store/counters/lib.zip"):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path], catalog=catalog)
                self.assertEqual(report.decision, "review", list(report.reasons))
                self.assertLen(report.guarded_paths, 1, report.guarded_paths)
                self.assertIn(path, report.guarded_paths[0])
                self.assertIn("archive or directory on the import path", report.guarded_paths[0])
                self.assertIn(COUNTER, report.guarded_paths[0])
        # Near misses: a name that only starts alike, a file inside no root.
        for path in ("store/counters/vendor.zip.txt", "store/counters/lib.zi"):
            with self.subTest(path=path):
                report = gate(["store/counters/inc.py", path], catalog=catalog)
                self.assertEqual(report.decision, "promote", list(report.reasons))

    def test_an_unsandboxed_closure_of_a_matched_property_is_review(self):
        opted = {
            COUNTER: ("//store:gen (local = True)",),
            SECRET: ('//api:gen (tags = ["local"])',),
        }
        report = gate(["store/counters/inc.py"], unsandboxed=opted)
        self.assertEqual(report.decision, "review")
        self.assertEqual(
            list(report.unsandboxed_targets),
            [f"//store:gen (local = True) (in the closure of {COUNTER})"],
        )
        self.assertIn("//store:gen", report.rule)
        self.assertEqual(row(report, COUNTER).vote, "yes")
        # The gate never builds such a test, so it has no runs: not run, never a pass.
        outcomes = {SECRET: PASS, KEYS: PASS}
        report = gate(["store/counters/inc.py"], outcomes=outcomes, unsandboxed=opted)
        self.assertEqual(report.decision, "review")
        self.assertEmpty(report.errors)
        counter = row(report, COUNTER)
        self.assertEqual((counter.classification, counter.vote), ("not_run", "no"))
        self.assertIn("outside the sandbox", counter.note)

    def test_the_paths_seen_must_be_the_paths_sent(self):
        paths = ["store/counters/inc.py", "store/counters/a b.py"]
        sent = changed_paths_digest(paths)
        report = gate(paths, changed_paths_sha256=sent)
        self.assertEqual(report.decision, "promote", list(report.reasons))
        self.assertEqual(report.changed_paths_sha256, sent)
        # One byte lost on the way, or another order, is a configuration error.
        for seen in (["store/counters/inc.py", "store/counters/a"], list(reversed(paths))):
            with self.subTest(seen=seen):
                report = gate(seen, changed_paths_sha256=sent)
                self.assertEqual(report.decision, "review")
                self.assertIn("not the ones the CLI sent", report.errors[0])
        # Without a digest (a plain `bazel test`) nothing is compared; the report still has it.
        report = gate(paths)
        self.assertEqual(report.changed_paths_sha256, sent)


class PrecedenceTest(absltest.TestCase):
    def test_exported_order_is_the_design_order(self):
        self.assertEqual(PRECEDENCE, DOCUMENTED_ORDER)

    CATALOG = (
        PropertySpec("s.pass", "strong", ("src/pass",)),
        PropertySpec("s.fail", "strong", ("src/fail",)),
        PropertySpec("s.flake", "strong", ("src/flake",)),
        PropertySpec("idle", "weak", ("idle",)),
    )

    def scenario(self, fire):
        """A patch on which exactly the decisions in `fire` (plus promote) apply."""
        paths = ["src/pass/x.py"]
        if "reject" in fire:
            paths.append("src/fail/x.py")
        if "hold" in fire:
            paths.append("src/flake/x.py")
        if "review" in fire:
            paths.append("ledger.txtpb")
        seals = (
            FixtureSeal(
                agent_gate_pb2.FixtureTree(root="fixtures/drift", seal_file="fixtures/drift.seal"),
                "aa",
                "ab",
            ),
        )
        return evaluate(
            GateInputs(
                catalog=self.CATALOG,
                changed_paths=tuple(paths),
                outcomes={"s.pass": PASS, "s.fail": FAIL, "s.flake": SPLIT},
                fixtures=seals if "fixture_fault" in fire else (),
                ledger=(LedgerRow("idle", "open", "c0", 30, "bob"),),
                commit_counts={"c0": 1},
                debt_cap=0 if "stop_queue" in fire else 1,
                ledger_path="ledger.txtpb",
                # The ledger's guard alone is the review: it needs no voter of its own.
                unobserved_ok=("ledger.txtpb",),
            )
        )

    def test_every_pair(self):
        ranked = DOCUMENTED_ORDER[:-1]
        for high, low in itertools.combinations(ranked, 2):
            with self.subTest(high=high, low=low):
                report = self.scenario({high, low})
                self.assertEqual(report.decision, high)
                self.assertEqual(decisions(report), [high, low])
                self.assertEqual(report.rule, report.reasons[0])
        for decision in ranked:
            with self.subTest(over="promote", decision=decision):
                report = self.scenario({decision})
                self.assertEqual(decisions(report), [decision])
        self.assertEqual(decisions(self.scenario(set())), ["promote"])

    def test_every_subset_lists_all_reasons_in_order(self):
        ranked = DOCUMENTED_ORDER[:-1]
        for size in range(len(ranked) + 1):
            for fire in itertools.combinations(ranked, size):
                with self.subTest(fire=fire):
                    report = self.scenario(set(fire))
                    expected = list(fire) or ["promote"]
                    self.assertEqual(decisions(report), expected)
                    self.assertEqual(report.decision, expected[0])


class LocalityInTheGateTest(absltest.TestCase):
    def test_per_component_locality(self):
        report = gate(["api/handlers_v2/x.py"])
        self.assertFalse(row(report, SECRET).matched)
        self.assertEqual(report.decision, "review")
        report = gate(["api/handlers/x.py"])
        self.assertEqual(row(report, SECRET).matched_by, "api/handlers/x.py")
        self.assertEqual(report.decision, "promote")

    def test_dot_slash_paths_are_normalized(self):
        report = gate(["./api/handlers/x.py"])
        self.assertEqual(row(report, SECRET).matched_by, "api/handlers/x.py")
        self.assertEqual(list(report.changed_paths), ["api/handlers/x.py"])


class ReportShapeTest(absltest.TestCase):
    def test_changed_paths_are_capped_and_counted(self):
        paths = [f"docs/page{i}.md" for i in range(1500)] + ["api/handlers/x.py"]
        report = gate(paths, run_id="nonce-1")
        self.assertEqual(report.changed_path_count, 1501)
        self.assertLen(report.changed_paths, 1000)
        self.assertEqual(report.run_id, "nonce-1")
        self.assertEqual(row(report, SECRET).matched_by, "api/handlers/x.py")

    def test_json_uses_proto_field_names(self):
        report = gate(["api/handlers/x.py"])
        data = json_format.MessageToDict(report, preserving_proto_field_name=True)
        self.assertEqual(data["decision"], "promote")
        self.assertEqual(data["rows"][0]["property_id"], SECRET)
        self.assertEqual(data["rows"][0]["vote"], "yes")

    def test_invalid_catalog_entries_are_errors(self):
        catalog = (
            PropertySpec("a", "strong", ("/abs",)),
            PropertySpec("b", "medium", ("b",)),
            PropertySpec("c", "weak", ()),
            PropertySpec("a", "strong", ("a",)),
        )
        report = gate(["a/x.py"], catalog=catalog, fixtures=())
        self.assertEqual(report.decision, "review")
        text = "\n".join(report.errors)
        for needle in ("absolute", "'medium'", "empty locality", "declared twice"):
            self.assertIn(needle, text)


class BuildBreakTest(absltest.TestCase):
    """A patch that breaks the build of a matched property's test, where the base built it."""

    def test_a_broken_test_rejects_and_the_others_are_not_run(self):
        report = gate(
            ["api/serializers/user.py"],
            outcomes={},
            build_broken={SECRET: "//api/tests:no_secret_fields_test"},
        )
        self.assertEqual(report.decision, "reject", report.reasons)
        self.assertEqual(list(report.errors), [])
        self.assertIn("breaks the build of the test of strong property " + SECRET, report.rule)
        self.assertIn("//api/tests:no_secret_fields_test", report.rule)
        broken = row(report, SECRET)
        self.assertEqual((broken.classification, broken.vote), ("error", "no"))
        self.assertIn("builds at the base", broken.note)
        stopped = row(report, KEYS)
        self.assertEqual((stopped.classification, stopped.vote), ("not_run", "no"))
        self.assertIn("the build stopped", stopped.note)

    def test_review_still_outranks_it(self):
        report = gate(
            ["api/serializers/user.py", "api/tests/no_secret_test.py"],
            outcomes={},
            build_broken={SECRET: "//api/tests:no_secret_fields_test"},
        )
        self.assertEqual(decisions(report)[:2], ["review", "reject"], report.reasons)

    def test_an_unmatched_property_is_never_blamed(self):
        report = gate(
            ["api/serializers/user.py"],
            outcomes={},
            build_broken={COUNTER: "//store/tests:monotonic_under_replay_test"},
        )
        self.assertNotEqual(report.decision, "promote")
        self.assertNotIn("breaks the build", " ".join(report.reasons))
        self.assertNotEqual(list(report.errors), [], "matched properties without a run")

    def test_a_frozen_broken_test_blames_nothing_and_fails_closed(self):
        report = gate(
            ["store/counters/counter.py"],
            outcomes={},
            ledger=[freeze(COUNTER)],
            build_broken={COUNTER: "//store/tests:monotonic_under_replay_test"},
        )
        self.assertNotEqual(report.decision, "promote")
        self.assertNotIn("breaks the build", " ".join(report.reasons))


class FixtureEditTest(absltest.TestCase):
    """A review of a fixture edit says what merging it does to the seal, and how to reseal."""

    def test_a_tree_edited_without_its_seal_is_left_stale(self):
        report = gate(["store/counters/counter.py", "fixtures/replays/day1.json"])
        self.assertEqual(report.decision, "review")
        (stale,) = [r for r in report.reasons if "seal is stale" in r]
        self.assertTrue(stale.startswith("review: the diff touches what an agent may not touch"))
        self.assertIn("fixtures/replays (seal file fixtures/replays.seal)", stale)
        self.assertIn("agent-gate seal ROOT > SEAL_FILE", stale)
        self.assertIn("update_seal", stale)
        self.assertFalse([r for r in report.reasons if "new seal is the tree's" in r])

    def test_a_tree_edited_with_its_seal_asks_for_a_check(self):
        report = gate(["fixtures/replays/day1.json", "fixtures/replays.seal"])
        self.assertEqual(report.decision, "review")
        self.assertFalse([r for r in report.reasons if "seal is stale" in r])
        (resealed,) = [r for r in report.reasons if "new seal is the tree's" in r]
        self.assertIn("fixtures/replays (seal file fixtures/replays.seal)", resealed)

    def test_an_untouched_tree_says_nothing_of_its_seal(self):
        report = gate(["store/counters/counter.py"])
        self.assertFalse([r for r in report.reasons if "seal" in r], report.reasons)


if __name__ == "__main__":
    absltest.main()
