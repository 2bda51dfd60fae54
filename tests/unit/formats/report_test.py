"""The report writers: stable JSON keys, lossless text, a readable PR comment,
schema-shaped JUnit XML with escaping, and atomic files."""

import json
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

from absl.testing import absltest
from google.protobuf import json_format, text_format

from agent_gate.formats import report as report_lib
from proto import agent_gate_pb2


def promote_report() -> agent_gate_pb2.GateReport:
    report = agent_gate_pb2.GateReport(
        decision="promote",
        rule="every matched strong property passed twice",
        debt=1,
        debt_cap=5,
        changed_paths=["api/handlers/user.py"],
        changed_path_count=1,
        run_id="nonce-1",
    )
    report.rows.add(
        property_id="resp.no_secret_fields",
        strength="strong",
        matched=True,
        matched_by="api/handlers/user.py",
        exit_codes=[0, 0],
        classification="pass",
        vote="yes",
        seal_status="match",
    )
    # Not matched: every proto field of it is at its default except the id.
    report.rows.add(property_id="counter.monotonic_under_replay")
    return report


def reject_report() -> agent_gate_pb2.GateReport:
    report = agent_gate_pb2.GateReport(
        decision="reject",
        rule="a matched strong property failed stably (fail/fail)",
        reasons=['strong <bad&id"> failed twice', "empty quorum"],
        guarded_paths=["fixtures/responses/a.json: sealed fixture"],
        errors=["ledger.txtpb:3: bad state"],
        debt=2,
        debt_cap=5,
    )
    report.rows.add(
        property_id='strong <bad&id">',
        strength="strong",
        matched=True,
        matched_by="api/x|y.py",
        exit_codes=[3, 3],
        classification="fail",
        vote="no",
        seal_status="match",
        note='exit <3> & "quoted"\x07',
    )
    report.rows.add(
        property_id="counter.monotonic_under_replay",
        strength="strong",
        matched=True,
        matched_by="store/counters/c.py",
        exit_codes=[0, 1],
        classification="flake",
        vote="excluded",
        seal_status="match",
        ledger_state="open",
    )
    report.rows.add(
        property_id="resp.keys_present",
        strength="weak",
        matched=False,
        vote="not_voting",
        seal_status="none",
    )
    report.ledger.add(
        property_id="counter.monotonic_under_replay",
        state="open",
        retire_by_commit_count=30,
        commits_since_open=-1,
        owner="unassigned",
    )
    report.fixtures.add(
        root="fixtures/replays",
        seal_file="fixtures/replays.seal",
        expected="ab" * 32,
        actual="ab" * 32,
        status="match",
    )
    report.override.by = "alice"
    report.override.ignored_ids.append("counter.monotonic_under_replay")
    return report


class JsonTest(absltest.TestCase):
    def test_keys_present_even_when_empty(self):
        data = json.loads(report_lib.to_json(promote_report()))
        self.assertEqual("promote", data["decision"])
        self.assertLen(data["rows"], 2)
        for row in data["rows"]:
            self.assertIn("property_id", row)
            self.assertIn("vote", row)
            self.assertIn("matched", row)
        unmatched = data["rows"][1]
        self.assertEqual("", unmatched["vote"])
        self.assertFalse(unmatched["matched"])
        self.assertEqual([], unmatched["exit_codes"])
        self.assertIn("errors", data)
        self.assertNotIn("debtCap", data)  # proto field names, not camelCase

    def test_empty_report_still_has_decision_and_rows(self):
        data = json.loads(report_lib.to_json(agent_gate_pb2.GateReport()))
        self.assertEqual("", data["decision"])
        self.assertEqual([], data["rows"])
        self.assertEqual(["decision", "rule"], list(data)[:2])

    def test_round_trip_through_json_format(self):
        for report in (promote_report(), reject_report()):
            parsed = json_format.Parse(report_lib.to_json(report), agent_gate_pb2.GateReport())
            self.assertEqual(report, parsed)

    def test_values(self):
        data = json.loads(report_lib.to_json(reject_report()))
        self.assertEqual("reject", data["decision"])
        self.assertEqual('strong <bad&id">', data["rows"][0]["property_id"])
        self.assertEqual([3, 3], data["rows"][0]["exit_codes"])
        self.assertEqual(["excluded"], [r["vote"] for r in data["rows"] if r["ledger_state"]])


class TextTest(absltest.TestCase):
    def test_round_trip(self):
        for report in (promote_report(), reject_report()):
            parsed = text_format.Parse(report_lib.to_text(report), agent_gate_pb2.GateReport())
            self.assertEqual(report, parsed)


class MarkdownTest(absltest.TestCase):
    def test_decision_first(self):
        first = report_lib.to_markdown(reject_report()).splitlines()[0]
        self.assertTrue(first.startswith("**"))
        self.assertIn("reject", first)
        self.assertIn("fail/fail", first)
        self.assertIn("promote", report_lib.to_markdown(promote_report()).splitlines()[0])

    def test_table_and_sections(self):
        text = report_lib.to_markdown(reject_report())
        lines = text.splitlines()
        header = lines.index(
            "| property | strength | matched by | runs | classification | vote | seal |"
        )
        self.assertEqual("| --- | --- | --- | --- | --- | --- | --- |", lines[header + 1])
        body = lines[header + 2 : header + 5]
        self.assertLen(body, 3)
        # Each body row has exactly seven cells: the pipe in a path is escaped.
        for line in body:
            self.assertEqual(8, line.replace("\\|", "").count("|"), line)
        self.assertIn("api/x\\|y.py", body[0])
        self.assertIn('\\<bad\\&id"\\>', body[0])
        self.assertIn("| 3, 3 |", body[0])
        self.assertIn("| excluded |", body[1])
        for section in (
            "**Reasons**",
            "**Errors",
            "**Guarded paths",
            "**Debt:** 2 / 5",
            "**Ledger**",
        ):
            self.assertIn(section, text)
        self.assertIn("alice", text)


class JunitTest(absltest.TestCase):
    def parse(self, report):
        xml = report_lib.to_junit(report)
        self.assertTrue(xml.startswith('<?xml version="1.0" encoding="UTF-8"?>'))
        return ET.fromstring(xml.encode("utf-8"))

    def test_reject(self):
        root = self.parse(reject_report())
        suites = root.findall("testsuite")
        self.assertLen(suites, 1)
        suite = suites[0]
        self.assertEqual("agent_gate", suite.get("name"))
        cases = suite.findall("testcase")
        # Two matched rows plus the decision testcase; the unmatched row is absent.
        self.assertEqual(
            ['strong <bad&id">', "counter.monotonic_under_replay", "decision"],
            [case.get("name") for case in cases],
        )
        self.assertEqual("3", suite.get("tests"))
        self.assertEqual("2", suite.get("failures"))
        self.assertEqual("1", suite.get("skipped"))
        self.assertEqual("strong", cases[0].get("classname"))
        failure = cases[0].find("failure")
        self.assertIn("fail", failure.get("message"))
        self.assertIn("3, 3", failure.get("message"))
        self.assertIn('exit <3> & "quoted"', failure.text)
        skipped = cases[1].find("skipped")
        self.assertEqual("excluded: open freeze; not a pass", skipped.get("message"))
        self.assertIsNone(cases[1].find("failure"))
        decision = cases[2].find("failure")
        self.assertIn("reject", decision.get("message"))
        self.assertIn("ledger.txtpb:3", decision.text)

    def test_escaping_in_raw_xml(self):
        xml = report_lib.to_junit(reject_report())
        self.assertIn('name="strong &lt;bad&amp;id&quot;&gt;"', xml)
        self.assertNotIn("\x07", xml)  # not representable in XML 1.0

    def test_promote(self):
        root = self.parse(promote_report())
        suite = root.find("testsuite")
        self.assertEqual("2", suite.get("tests"))
        self.assertEqual("0", suite.get("failures"))
        self.assertEqual("0", suite.get("skipped"))
        self.assertEqual([], suite.findall(".//failure"))
        names = [case.get("name") for case in suite.findall("testcase")]
        self.assertEqual(["resp.no_secret_fields", "decision"], names)


class SummaryTest(absltest.TestCase):
    def test_lines(self):
        lines = report_lib.summary_lines(reject_report())
        self.assertEqual(
            "agent_gate: reject — a matched strong property failed stably (fail/fail)", lines[0]
        )
        rows = lines[1:4]
        self.assertIn("vote=no", rows[0])
        self.assertIn("vote=excluded", rows[1])
        self.assertIn("not matched", rows[2])
        # Columns line up: the vote column starts at the same offset on every row.
        self.assertLen({row.index("vote=") for row in rows}, 1)
        self.assertIn("  error: ledger.txtpb:3: bad state", lines)


# What a hostile patch writes: test output that tries to close the code fence and
# print a decision of its own, HTML, terminal escapes and bytes XML cannot hold; and
# the same in file names (newlines and carriage returns never reach a report).
FORGED_OUTPUT = (
    "ok\n```\n````\n~~~\n**agent_gate: promote** — forged\n\nDecision: promote\n"
    '<script>alert(1)</script><!-- \n</failure></testcase><testcase name="forged"/>\n'
    "\x1b[2K\x1b[1Aagent_gate: promote\r\x00\x07\ufffe\u202eetomorp"
)
FORGED_NAMES = [
    "lib/calc/x``` **agent_gate: promote**.py",
    "lib/calc/<img src=x onerror=alert(1)>.py",
    "lib/calc/\x1b[2K\x1b[1Aagent_gate: promote.py",
    "lib/calc/\u202eyp.etomorp",
    "lib/calc/x|y]](javascript:alert(1))",
]


def forged_report() -> agent_gate_pb2.GateReport:
    """A reject whose every agent-written field carries a forgery."""
    report = agent_gate_pb2.GateReport(
        decision="reject",
        rule="reject: a matched strong property failed stably",
        reasons=["reject: a matched strong property failed stably"],
        changed_paths=FORGED_NAMES,
        changed_path_count=len(FORGED_NAMES),
        guarded_paths=[f"{name} (predicate source)" for name in FORGED_NAMES],
        unobserved_paths=FORGED_NAMES,
        unsandboxed_targets=[f"//lib/calc:{name} (local = True)" for name in FORGED_NAMES[:2]],
        run_id="forged-run",
    )
    row = report.rows.add(
        property_id="calc.sums",
        strength="strong",
        matched=True,
        matched_by=FORGED_NAMES[0],
        exit_codes=[1, 1],
        classification="fail",
        vote="no",
        seal_status="match",
        note=f"failed twice; {FORGED_NAMES[2]}",
        split=FORGED_OUTPUT,
    )
    for number in (1, 2):
        row.evidence.add(run_number=number, exit_code=1, output_tail=FORGED_OUTPUT, log="x.log")
    return report


def _outside_code_fences(markdown: str) -> list[str]:
    """The lines a CommonMark renderer reads as markup: every fenced block left out.

    A fence opens with three or more backticks or tildes (indented by at most three
    spaces) and closes only with a run of the same character at least as long.
    """
    outside: list[str] = []
    fence = ""
    for line in markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        stripped = line[: len(line) - len(line.lstrip(" "))][:4]
        body = line.lstrip(" ") if len(stripped) <= 3 else line
        if fence:
            if (
                body.rstrip()
                and set(body.rstrip()) == {fence[0]}
                and len(body.rstrip()) >= len(fence)
            ):
                fence = ""
            continue
        run = len(body) - len(body.lstrip(body[:1])) if body[:1] in ("`", "~") else 0
        if run >= 3:
            fence = body[:run]
            continue
        outside.append(line)
    assert not fence, "a code fence is left open: everything after it is output"
    return outside


class ForgedOutputTest(absltest.TestCase):
    """Test output and file names from a patch never read as the report's own words."""

    def test_markdown_has_one_decision_and_no_markup_from_the_patch(self):
        markdown = report_lib.to_markdown(forged_report())
        outside = _outside_code_fences(markdown)
        decisions = [line for line in outside if "agent_gate:" in line and "promote" in line]
        self.assertEqual(decisions, [], decisions)
        self.assertTrue(outside[0].startswith("**agent_gate: reject**"), outside[0])
        starts = [
            line for line in outside if line.lstrip("-> ").startswith(("Decision", "**agent"))
        ]
        self.assertEqual(starts, outside[:1])  # the forged lines are flattened into escaped text
        for line in outside:
            self.assertNotRegex(line, r"(?<!\\)[<`]", line)  # no HTML, no code span opens
            self.assertNotIn("\x1b", line)
            self.assertNotIn("\u202e", line)

    def test_junit_holds_the_output_as_text(self):
        xml = report_lib.to_junit(forged_report())
        root = ET.fromstring(xml)  # well-formed, whatever the output held
        names = [case.get("name") for case in root.iter("testcase")]
        self.assertEqual(names, ["calc.sums", "decision"])
        decision = next(c for c in root.iter("testcase") if c.get("name") == "decision")
        self.assertIn("reject", decision.find("failure").get("message"))
        self.assertIn("</failure></testcase>", root.find(".//testcase/failure").text)
        for char in ("\x00", "\x07", "\x1b", "\ufffe"):
            self.assertNotIn(char, xml)
        xml.encode("utf-8")  # no lone surrogate: the file can be written

    def test_summary_lines_carry_no_terminal_controls(self):
        lines = report_lib.summary_lines(forged_report())
        self.assertEqual(
            lines[0], "agent_gate: reject — reject: a matched strong property failed stably"
        )
        self.assertEqual([line for line in lines if line.startswith("agent_gate:")], lines[:1])
        for line in lines:
            self.assertNotRegex(line, "[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
        self.assertTrue(any("\\x1b[2K" in line for line in lines), lines)


class RunsLineTest(absltest.TestCase):
    """Every view says how many properties ran and whether their runs were this run id's."""

    def test_fresh_runs(self):
        report = promote_report()
        report.runs_fresh = True
        line = "1 property ran twice, fresh (this run id's own)"
        self.assertEqual(report_lib.runs_line(report), line)
        self.assertIn(f"run id nonce-1 · {line}", report_lib.to_markdown(report))
        self.assertIn(f"  runs: {line}, run id nonce-1", report_lib.summary_lines(report))
        self.assertIn(f'name="runs" value="{line}"', report_lib.to_junit(report))

    def test_runs_not_known_to_be_fresh(self):
        self.assertEqual(
            report_lib.runs_line(reject_report()), "2 properties ran twice, NOT known to be fresh"
        )

    def test_a_report_where_nothing_ran_says_so(self):
        report = agent_gate_pb2.GateReport(decision="stop_queue", rule="stop_queue: debt 9 > 5")
        report.rows.add(property_id="p", matched=True, classification="not_run")
        self.assertEqual(report_lib.runs_line(report), "no property ran")
        self.assertIn("no property ran", report_lib.to_markdown(report))
        self.assertIn("  runs: no property ran", report_lib.summary_lines(report))


class WriteAllTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.dir = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))

    def test_writes_four_files(self):
        report = reject_report()
        xml_path = self.dir / "xml" / "test.xml"
        written = report_lib.write_all(report, self.dir / "out", xml_path)
        names = sorted(os.listdir(self.dir / "out"))
        self.assertEqual(
            ["agent_gate_report.json", "agent_gate_report.md", "agent_gate_report.txtpb"], names
        )
        self.assertIn(xml_path, written)
        self.assertEqual(report_lib.to_junit(report), xml_path.read_text(encoding="utf-8"))
        data = json.loads((self.dir / "out" / "agent_gate_report.json").read_text("utf-8"))
        self.assertEqual("reject", data["decision"])
        text = (self.dir / "out" / "agent_gate_report.txtpb").read_text("utf-8")
        self.assertEqual(report, text_format.Parse(text, agent_gate_pb2.GateReport()))

    def test_default_xml_location(self):
        report_lib.write_all(promote_report(), self.dir)
        self.assertTrue((self.dir / "agent_gate_report.xml").is_file())
        self.assertLen(os.listdir(self.dir), 4)

    def test_write_failure_propagates_without_temp_files(self):
        with (
            mock.patch.object(report_lib.os, "replace", side_effect=OSError(28, "No space")),
            self.assertRaises(OSError),
        ):
            report_lib.write_all(promote_report(), self.dir)
        self.assertEqual([], os.listdir(self.dir))


if __name__ == "__main__":
    absltest.main()
