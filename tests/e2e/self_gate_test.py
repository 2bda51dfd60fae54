"""agent_gate gates itself: real `bazel test //:agent_gate` runs in this repository.

By the rule-set guard a change to rules/, tools/ or proto/ is always review (an
agent never auto-merges a change to its own judge); a change to docs/ or tests/
is promoted when its properties pass twice. Inside this workspace Bazel 4.2.3
knows the flags as `--//:NAME` (see docs/offline.md). SelfGateBazel7Test runs
the same gate on the Bazel 7.7.1 lane (tools/bazel7, bzlmod), with the defaults
Bazel 8 and 9 flipped, where `--@agent_gate//:NAME` names the root module.
"""

import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

from absl.testing import absltest  # noqa: E402

from agent_gate.drive import bazel_client, gate_target  # noqa: E402


def _gate(*changed: str, target: str = "//:agent_gate") -> gate_target.GateRun:
    run = gate_target.run_gate(
        ROOT,
        target,
        changed_paths=changed,
        run_id=gate_target.new_run_id("self"),
        flag_prefix="//:",
    )
    if run.report is None:
        raise AssertionError(f"no report: {run.problem}")
    return run


def _rows(run: gate_target.GateRun) -> dict[str, str]:
    return {row.property_id: row.vote for row in run.report.rows}


class SelfGateTest(absltest.TestCase):
    def test_docs_change_is_promoted_when_its_properties_pass(self):
        run = _gate("docs/ledger.md")
        self.assertEqual(run.decision, "promote", run.report.reasons)
        self.assertEqual(run.exit_code, 0)
        self.assertEqual(_rows(run)["self.docs_contract"], "yes")
        self.assertEqual(_rows(run)["self.decision_table"], "not_voting")

    def test_tests_change_is_promoted(self):
        run = _gate("tests/unit/new_helper.py")
        self.assertEqual(run.decision, "promote", run.report.reasons)
        self.assertEqual(_rows(run)["self.decision_table"], "yes")

    def test_rule_set_change_is_review_even_beside_passing_docs(self):
        run = _gate("rules/private/gate.bzl", "docs/rules.md")
        self.assertEqual(run.decision, "review")
        self.assertNotEqual(run.exit_code, 0)
        guarded = run.report.guarded_paths
        self.assertTrue(any(p.startswith("rules/private/gate.bzl") for p in guarded))
        self.assertEqual(_rows(run)["self.docs_contract"], "yes")

    def test_tool_and_proto_changes_are_review(self):
        for path in ("tools/agent_gate/core/quorum.py", "proto/agent_gate.proto"):
            with self.subTest(path=path):
                run = _gate(path, "tests/unit/new_helper.py")
                self.assertEqual(run.decision, "review")
                self.assertTrue(any(p.startswith(path) for p in run.report.guarded_paths))

    def test_path_with_commas_and_percent_signs_is_one_path(self):
        """A crafted name cannot pose as several paths, e.g. one inside rules/."""
        odd = " docs/odd,rules/defs.bzl %2C.md"
        run = _gate(odd)
        self.assertEqual(list(run.report.changed_paths), [odd])
        self.assertEqual(run.report.changed_path_count, 1)
        self.assertEqual(run.decision, "review")  # no strong locality covers " docs/..."
        self.assertEmpty(run.report.guarded_paths)

    def test_predicate_source_change_is_review(self):
        run = _gate("tests/unit/decision_table_test.py")
        self.assertEqual(run.decision, "review")

    def test_fixture_change_is_review(self):
        run = _gate("fixtures/decision_table/table.tsv", "tests/unit/new_helper.py")
        self.assertEqual(run.decision, "review")

    def test_full_strong_pass(self):
        run = _gate(target="//:full_strong_pass")
        self.assertEqual(run.decision, "promote", run.report.reasons)
        self.assertEqual(_rows(run)["self.decision_table"], "yes")
        self.assertEqual(_rows(run)["self.docs_contract"], "yes")
        self.assertEqual(_rows(run)["self.docs_links"], "not_voting")

    def test_double_run_actions_in_the_action_graph(self):
        """One PropertyDoubleRun per matched property, no network, never cached."""
        result = subprocess.run(
            [
                "bazel",
                "aquery",
                "--//:changed_paths=docs/ledger.md",
                "--//:run_id=aquery-probe",
                "mnemonic(PropertyDoubleRun, //:agent_gate)",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        actions = result.stdout.split("action '")[1:]
        self.assertLen(actions, 2)  # self.docs_contract and self.docs_links
        for action in actions:
            for requirement in ("block-network", "no-cache", "no-remote-cache"):
                self.assertIn(requirement, action)
            self.assertIn("aquery-probe", action)
        self.assertNotIn("self.decision_table", result.stdout)


class SelfGateBazel7Test(absltest.TestCase):
    LATER_DEFAULTS = (
        "--noenable_workspace",
        "--incompatible_autoload_externally=",
        "--incompatible_disallow_empty_glob",
        "--incompatible_auto_exec_groups",
        "--spawn_strategy=linux-sandbox",
    )

    def gate(self, *changed: str) -> gate_target.GateRun:
        # tools/bazel7 is a script, so it is named explicitly (find_bazel trusts that).
        with mock.patch.dict(os.environ, {bazel_client.BAZEL_ENV: str(ROOT / "tools" / "bazel7")}):
            run = gate_target.run_gate(
                ROOT,
                changed_paths=changed,
                run_id=gate_target.new_run_id("self7"),
                extra_flags=self.LATER_DEFAULTS,
            )
        if run.report is None:
            raise AssertionError(f"no report: {run.problem}")
        return run

    def test_docs_change_is_promoted(self):
        run = self.gate("docs/ledger.md")
        self.assertEqual(run.decision, "promote", list(run.report.reasons))
        self.assertEqual(run.exit_code, 0)
        self.assertEqual(_rows(run)["self.docs_contract"], "yes")

    def test_rule_set_change_is_review(self):
        run = self.gate("rules/private/gate.bzl", "docs/rules.md")
        self.assertEqual(run.decision, "review")
        guarded = run.report.guarded_paths
        self.assertTrue(any(p.startswith("rules/private/gate.bzl") for p in guarded))


if __name__ == "__main__":
    absltest.main()
