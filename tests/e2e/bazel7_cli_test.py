"""cli_test on the Bazel 7.7.1 lane: `agent-gate score` of every decision, bzlmod.

The same harness as tests/e2e/cli_test.py, with tools/bazel7 as the Bazel the
CLI runs (AGENT_GATE_BAZEL): the user's monorepo is a copy of examples/monorepo
built from its MODULE.bazel, with the defaults Bazel 8 and 9 flipped
(tools/bazel7.bazelrc). What runs here is what depends on Bazel: a cold and a
warm score, every manifest case (promote, reject, hold, review, fixture_fault,
stop_queue) with its exit code and report, the seal check before apply, the
stop_queue override, a gate report with errors, and the deadline stopping the
lane's client and server. One scoring worktree and so one server.

Needs root and the sid root (tools/bootstrap_bazel7).
Run: .venv/bin/python3 tests/e2e/bazel7_cli_test.py
"""

import lane

lane.use_bazel7()

from absl.testing import absltest  # noqa: E402
from cli_test import CliTest  # noqa: E402

LANE_TESTS = {
    CliTest: (
        "test_first_score_cold_second_warm",
        "test_every_manifest_case_exits_with_its_decision_code",
        "test_fixture_fault_is_found_before_the_patch_is_applied",
        "test_override_gets_past_stop_queue_only_naming_open_rows",
        "test_a_report_with_errors_fails_closed",
        "test_past_the_deadline_nothing_is_decided_and_no_bazel_is_left",
    )
}


def load_tests(loader, tests, pattern):  # unittest's load_tests protocol
    return lane.suite(loader, LANE_TESTS)


if __name__ == "__main__":
    absltest.main()
