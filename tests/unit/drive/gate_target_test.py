"""The trust check of a gate report: it must be this run's, for the paths the CLI sent."""

import tempfile
from pathlib import Path

from absl.testing import absltest
from google.protobuf import json_format

from agent_gate.core import pathdigest
from agent_gate.drive import gate_target
from proto import agent_gate_pb2


class TrustedReportTest(absltest.TestCase):
    def write(self, **fields) -> Path:
        report = agent_gate_pb2.GateReport(decision="promote", run_id="r", **fields)
        path = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)) / "report.json"
        path.write_text(json_format.MessageToJson(report))
        return path

    def test_the_digest_must_match(self):
        paths = ["a", "b"]
        good = pathdigest.changed_paths_digest(paths)
        report, problem = gate_target._trusted_report(
            self.write(changed_paths_sha256=good, changed_path_count=2), "r", paths
        )
        self.assertIsNone(problem)
        self.assertIsNotNone(report)
        shifted = pathdigest.changed_paths_digest(["a,b"])
        report, problem = gate_target._trusted_report(
            self.write(changed_paths_sha256=shifted, changed_path_count=2), "r", paths
        )
        self.assertIsNone(report)
        self.assertIn("lost or shifted", problem)

    def test_a_report_without_the_digest_is_not_trusted(self):
        # Every evaluator of this rule set writes it: a report without one was written
        # by something else, or by a gate that did not see the paths the CLI sent.
        path = self.write(changed_paths=["a", "b"], changed_path_count=2)
        report, problem = gate_target._trusted_report(path, "r", ["a", "b"])
        self.assertIsNone(report)
        self.assertIn("digest missing", problem)


if __name__ == "__main__":
    absltest.main()
