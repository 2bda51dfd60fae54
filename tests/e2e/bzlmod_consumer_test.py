"""A bzlmod consumer of agent_gate on Bazel 7.7.1: a real catalog, a real gate, real runs.

tests/e2e/workspaces/bzlmod_consumer is copied into a temporary directory (not
below /tmp: Bazel 7's hermetic /tmp would hide it from the sandbox), its
`local_path_override` pointed at this checkout, and the runner-fault probe
copied in. Then `tools/bazel7 test //:agent_gate`, with the defaults Bazel 8
and 9 flipped, under linux-sandbox:

* a passing property promotes (exit 0), with the path digest the CLI would send;
* a failing one rejects (exit 3, the report says reject);
* the leak probe writes everywhere it can in run 1 and looks for it in run 2: it
  passes twice, both runs isolated, the action saw only loopback, and nothing it
  wrote is left on the host.

Needs root and the sid root (tools/bootstrap_bazel7).
Run: .venv/bin/python3 tests/e2e/bzlmod_consumer_test.py
"""

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools")]

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

from absl.testing import absltest  # noqa: E402
from bazel7_workspace import Bazel7Workspace  # noqa: E402

from agent_gate.core import pathdigest  # noqa: E402
from agent_gate.drive import gate_target  # noqa: E402

SOURCE = ROOT / "tests" / "e2e" / "workspaces" / "bzlmod_consumer"
PROBE = ROOT / "tests" / "e2e" / "workspaces" / "runner_faults" / "probe.sh"
LEAK_MARK = "agent-gate-leak-probe"
# What Bazel 8 and 9 turned on by default, emulated on 7.7.1.
LATER_DEFAULTS = (
    "--noenable_workspace",
    "--incompatible_autoload_externally=",
    "--incompatible_disallow_empty_glob",
    "--incompatible_auto_exec_groups",
)


class BzlmodConsumerTest(absltest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.lane = Bazel7Workspace("agent_gate-bzlmod-", name="consumer")
        cls.workspace = cls.lane.root
        shutil.copytree(SOURCE, cls.workspace)
        module = cls.workspace / "MODULE.bazel"
        text = module.read_text()
        assert 'path = "../../../..",' in text, "the test module no longer points at the checkout"
        module.write_text(text.replace('path = "../../../..",', f'path = "{ROOT}",'))
        shutil.copy(PROBE, cls.workspace / "probe.sh")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.lane.close()
        super().tearDownClass()

    def gate(self, *paths: str) -> tuple[subprocess.CompletedProcess[str], dict]:
        """`bazel test //:agent_gate` with `paths`; the process and the JSON report."""
        run_id = gate_target.new_run_id("bzlmod")
        done = self.lane.bazel(
            "test",
            "--spawn_strategy=linux-sandbox",
            *LATER_DEFAULTS,
            f"--@agent_gate//:changed_paths={','.join(paths)}",
            f"--@agent_gate//:run_id={run_id}",
            f"--@agent_gate//:changed_paths_sha256={pathdigest.changed_paths_digest(paths)}",
            "//:agent_gate",
            timeout=900,
        )
        outputs = self.workspace / "bazel-testlogs" / "agent_gate" / "test.outputs"
        archive = outputs / "outputs.zip"
        if archive.is_file():
            with zipfile.ZipFile(archive) as files:
                text = files.read("agent_gate_report.json").decode()
        else:
            text = (outputs / "agent_gate_report.json").read_text()
        report = json.loads(text)
        self.assertEqual(report["run_id"], run_id, done.stderr[-3000:])
        self.assertEqual(report["changed_paths_sha256"], pathdigest.changed_paths_digest(paths))
        return done, report

    def row(self, report: dict, property_id: str) -> dict:
        (found,) = [row for row in report["rows"] if row["property_id"] == property_id]
        return found

    def result(self, property_id: str) -> str:
        folder = self.workspace / "bazel-bin" / "agent_gate.runs"
        return (folder / f"{property_id}.result.txtpb").read_text()

    def test_a_passing_property_promotes(self) -> None:
        done, report = self.gate("pass/x")
        self.assertEqual(report["decision"], "promote", report["reasons"])
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        self.assertEqual(self.row(report, "fault.pass")["exit_codes"], [0, 0])

    def test_a_failing_property_rejects(self) -> None:
        done, report = self.gate("fail/x")
        self.assertEqual(report["decision"], "reject", report["reasons"])
        self.assertEqual(done.returncode, 3)
        row = self.row(report, "fault.fail")
        self.assertEqual(row["exit_codes"], [1, 1])
        self.assertLen(row["evidence"], 2)

    def test_the_two_runs_share_nothing_and_leave_nothing(self) -> None:
        _, report = self.gate("leak/x")
        row = self.row(report, "fault.leak")
        self.assertEqual(row["exit_codes"], [0, 0], json.dumps(row, indent=1))
        self.assertEqual(report["decision"], "promote", report["reasons"])
        result = self.result("fault.leak")
        self.assertEqual(result.count("isolated: true"), 2, result)
        self.assertIn("network_blocked: true", result)
        self.assertIn('network_interfaces: "lo"', result)
        log = (self.workspace / "bazel-bin" / "agent_gate.runs" / "fault.leak.run1.log").read_text()
        places = [line[len("place ") :] for line in log.splitlines() if line.startswith("place ")]
        self.assertNotEmpty(places)
        # /proc/<pid>/... were the run's own processes, gone with its namespace.
        for place in {*places, "/tmp", "/dev/shm", "/var/tmp", str(self.workspace)}:
            if place.startswith("/proc/"):
                continue
            self.assertFalse(
                (Path(place) / LEAK_MARK).exists(), f"run 1 left {LEAK_MARK} in {place}"
            )


if __name__ == "__main__":
    absltest.main()
