"""runner_faults_test on the Bazel 7.7.1 lane: the runner's isolation under Bazel 7.

The same harness as tests/e2e/runner_faults_test.py, with tools/bazel7 as Bazel
(bzlmod, the defaults Bazel 8 and 9 flipped). What runs here is what depends on
Bazel's sandbox: a daemon outliving its run, with linux-sandbox and without
(`--spawn_strategy=local`: review, the action saw the host's network), the leak
probe without a sandbox (under linux-sandbox it runs in
bzlmod_consumer_test.py), a property killing the runner, two gates at once on
one workspace, and writes into the sealed fixtures. One server, one output base.

Needs root and the sid root (tools/bootstrap_bazel7).
Run: .venv/bin/python3 tests/e2e/bazel7_runner_faults_test.py
"""

import lane

lane.use_bazel7()

from absl.testing import absltest  # noqa: E402
from runner_faults_test import RunnerFaultsTest  # noqa: E402

LANE_TESTS = {
    RunnerFaultsTest: (
        "test_daemon_outliving_its_run_under_linux_sandbox",
        "test_daemon_outliving_its_run_without_a_sandbox",
        "test_runs_share_nothing_under_linux_sandbox",
        "test_runs_share_nothing_without_a_sandbox",
        "test_a_property_cannot_kill_the_runner",
        "test_two_gates_at_once_on_one_workspace",
        "test_fixture_write_with_and_without_a_sandbox",
    )
}


def load_tests(loader, tests, pattern):  # unittest's load_tests protocol
    return lane.suite(loader, LANE_TESTS)


if __name__ == "__main__":
    absltest.main()
