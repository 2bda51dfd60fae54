"""Whose fault a failed build is: the build event protocol's failed targets, and the words
that mean the machine (or a fixture seal), not a broken test, stopped the build."""

import json
import tempfile
from pathlib import Path

from absl.testing import absltest

from agent_gate.drive import build_break
from agent_gate.formats import evidence


class BuildBreakTest(absltest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))

    def _bep(self, *events) -> Path:
        path = self.root / "bep.json"
        path.write_text("".join(json.dumps(event) + "\n" for event in events) + '{"cut')
        return path

    def test_failed_and_aborted_targets_in_any_spelling(self):
        bep = self._bep(
            {"id": {"targetCompleted": {"label": "//a:ok_test"}}, "completed": {"success": True}},
            {"id": {"targetCompleted": {"label": "@@//b:broken_test"}}, "completed": {}},
            {"id": {"targetConfigured": {"label": "@//c:analysis_test"}}, "aborted": {}},
            {"id": {"targetCompleted": {"label": "@dep//d:x"}}, "completed": {"success": False}},
            {"id": {"progress": {}}, "aborted": {}},
        )
        self.assertEqual(
            build_break.failed_labels(bep), {"//b:broken_test", "//c:analysis_test", "@dep//d:x"}
        )

    def test_no_file_blames_nothing(self):
        self.assertEqual(build_break.failed_labels(self.root / "missing.json"), set())

    def test_errors_without_progress_lines_are_bounded(self):
        log = self.root / "build.log"
        lines = ["Loading: 0 packages loaded", "INFO: Analyzed 3 targets", "[3 / 9] compiling"]
        lines += [f"ERROR: line {n}" for n in range(evidence.TAIL_LINES + 50)]
        log.write_text("\n".join(lines) + "\n")
        text, omitted = build_break.error_text(log)
        kept = text.splitlines()
        self.assertLen(kept, evidence.TAIL_LINES)
        self.assertEqual(kept[-1], f"ERROR: line {evidence.TAIL_LINES + 49}")
        self.assertNotIn("INFO:", text)
        self.assertGreater(omitted, 0)

    def test_the_machine_or_a_seal_is_never_the_tests_fault(self):
        for said in (
            "ERROR: ... Sealing fixtures fixtures/a (3 files) failed: exit 1",
            "java.lang.OutOfMemoryError: Java heap space",
            "gcc: fatal error: Killed signal terminated program cc1plus",
            "Server terminated abruptly (error code: 14)",
        ):
            with self.subTest(said=said):
                log = self.root / "build.log"
                log.write_text(f"ERROR: //a:t failed\n{said}\n")
                self.assertTrue(build_break.infrastructure(log))
        log.write_text("ERROR: no such target '//store/counters:counters'\n")
        self.assertEqual(build_break.infrastructure(log), "")


if __name__ == "__main__":
    absltest.main()
