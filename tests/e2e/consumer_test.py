"""A consumer workspace outside the root package tree, built by agent_gate_dependencies() alone.

examples/consumer is listed in .bazelignore; its WORKSPACE declares only
`local_repository(agent_gate)` and `agent_gate_dependencies()`. Its py_binary
imports agent_gate's generated ledger module and the runfiles library.
"""

import os
import subprocess
from pathlib import Path

from absl.testing import absltest

ROOT = Path(__file__).resolve().parents[2]
CONSUMER = ROOT / "examples" / "consumer"


def _bazel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bazel", *args],
        cwd=CONSUMER,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


class ConsumerWorkspaceTest(absltest.TestCase):
    @classmethod
    def tearDownClass(cls):
        _bazel("shutdown")

    def test_builds_and_runs_offline_through_agent_gate_dependencies(self):
        result = _bazel("test", "//...")
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        run = _bazel("run", "//:read_ledger")
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        self.assertEqual(run.stdout.strip(), "open counter.monotonic_under_replay budget=30")

    def test_missing_python_environment_is_a_clear_error(self):
        missing = "/nonexistent/agent_gate_python/bin/python3"
        result = _bazel("build", "//:read_ledger", env={"AGENT_GATE_PYTHON": missing})
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(missing, result.stderr)
        self.assertIn("tools/bootstrap", result.stderr)


if __name__ == "__main__":
    absltest.main()
