"""The freeze ledger: both formats load, bad rows are named by file and line,
and in-place edits keep every other byte and are atomic."""

import os
import tempfile
from pathlib import Path
from unittest import mock

from absl.testing import absltest
from google.protobuf import text_format

from agent_gate.formats import ledger
from proto import agent_gate_pb2

# The ledger row of docs/article.md, verbatim.
ARTICLE_ROW = """{
  "property_id": "counter.monotonic_under_replay",
  "state": "open",
  "seal": "<tree digest at open>",
  "reason": "exit mismatch across two runs on sealed fixtures",
  "opened_against_commit": "<git sha>",
  "retire_by_commit_count": 30,
  "owner": "unassigned"
}
"""

# The layout of docs/ledger.md, with comments around and inside the rows.
TEXT_LEDGER = """# Freeze ledger: reviewed changes only.
# One block a row.

freeze {
  property_id: "counter.monotonic_under_replay"
  state: "open"                      # or "retired"
  seal: "<tree digest at open>"
  reason: "exit mismatch across two runs on sealed fixtures"
  opened_against_commit: "<git sha>"
  retire_by_commit_count: 30
  owner: "unassigned"
}

# Retired after the replay fix landed.
freeze {
  property_id: "resp.no_secret_fields"
  state: "retired"
  reason: "flaky serializer ordering"
  retire_by_commit_count: 10
  owner: "api-team"
}
"""

KNOWN = ["counter.monotonic_under_replay", "resp.no_secret_fields", "resp.keys_present"]


class LedgerTestCase(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.dir = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))

    def write(self, name: str, text: str) -> Path:
        path = self.dir / name
        path.write_text(text, encoding="utf-8")
        return path

    def assert_error(self, path: Path, line: int, *fragments: str, known_ids=None) -> str:
        with self.assertRaises(ledger.LedgerError) as ctx:
            ledger.load_ledger(path, known_ids=known_ids)
        message = str(ctx.exception)
        self.assertIn(f"{path}:{line}:", message)
        for fragment in fragments:
            self.assertIn(fragment, message)
        return message


class LoadTest(LedgerTestCase):
    def test_article_json_row_verbatim(self):
        loaded = ledger.load_ledger(self.write("ledger.json", ARTICLE_ROW), known_ids=KNOWN)
        self.assertLen(loaded.freeze, 1)
        row = loaded.freeze[0]
        self.assertEqual("counter.monotonic_under_replay", row.property_id)
        self.assertEqual("open", row.state)
        self.assertEqual("<tree digest at open>", row.seal)
        self.assertEqual("<git sha>", row.opened_against_commit)
        self.assertEqual(30, row.retire_by_commit_count)
        self.assertEqual("unassigned", row.owner)

    def test_json_list_and_freeze_object(self):
        second = ARTICLE_ROW.replace("counter.monotonic_under_replay", "resp.keys_present")
        as_list = self.write("list.json", f"[\n{ARTICLE_ROW},\n{second}]\n")
        as_object = self.write("obj.json", f'{{"freeze": [\n{ARTICLE_ROW},\n{second}]}}\n')
        for path in (as_list, as_object):
            with self.subTest(path=path.name):
                loaded = ledger.load_ledger(path, known_ids=KNOWN)
                self.assertEqual(
                    ["counter.monotonic_under_replay", "resp.keys_present"],
                    [row.property_id for row in loaded.freeze],
                )
        self.assertEqual([2, 12], ledger.row_lines(as_list))
        self.assertEqual([2, 12], ledger.row_lines(as_object))

    def test_text_format_with_comments(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER)
        loaded = ledger.load_ledger(path, known_ids=KNOWN)
        self.assertEqual(["open", "retired"], [row.state for row in loaded.freeze])
        self.assertEqual(30, loaded.freeze[0].retire_by_commit_count)
        self.assertEqual([4, 15], ledger.row_lines(path))

    def test_other_text_layouts(self):
        text = (
            "# rows in list syntax and split lines\n"
            "freeze\n"
            "{ property_id: 'a' state: 'open' }\n"
            "freeze: [\n"
            "  { property_id: 'b' state: \"open\" },\n"
            '  < property_id: \'c\' state: "re" "tired" >\n'
            "]\n"
        )
        path = self.write("ledger.txtpb", text)
        self.assertEqual(["a", "b", "c"], [r.property_id for r in ledger.load_ledger(path).freeze])
        self.assertEqual([2, 5, 6], ledger.row_lines(path))
        ledger.set_state(path, "c", "open")
        self.assertEqual(text.replace('"re" "tired"', '"open"'), path.read_text())

    def test_text_suffixes(self):
        for suffix in (".textproto", ".pbtxt", ".txt"):
            loaded = ledger.load_ledger(self.write("ledger" + suffix, TEXT_LEDGER))
            self.assertLen(loaded.freeze, 2)

    def test_empty_files_are_empty_ledgers(self):
        for name, text in (
            ("a.txtpb", ""),
            ("b.txtpb", "# no rows yet\n"),
            ("c.json", ""),
            ("d.json", "{}"),
            ("e.json", "[]"),
        ):
            with self.subTest(name=name):
                self.assertEmpty(ledger.load_ledger(self.write(name, text)).freeze)

    def test_unparseable_text_names_file_and_line(self):
        broken = TEXT_LEDGER.replace('  owner: "api-team"', '  ownr: "api-team"')
        path = self.write("ledger.txtpb", broken)
        self.assert_error(path, 20, "ownr")
        unterminated = self.write("cut.txtpb", "freeze {\n  property_id: 'x'\n  state: \"open\n}\n")
        self.assert_error(unterminated, 3)

    def test_bad_state(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER.replace('"retired"', '"closed"'))
        self.assert_error(path, 15, "'closed'", '"open" or "retired"')

    def test_missing_property_id(self):
        path = self.write("ledger.txtpb", 'freeze {\n  state: "open"\n}\n')
        self.assert_error(path, 1, "no property_id")

    def test_unknown_id_only_when_known_ids_given(self):
        text = TEXT_LEDGER.replace("resp.no_secret_fields", "resp.no_secret_field")
        path = self.write("ledger.txtpb", text)
        self.assertLen(ledger.load_ledger(path).freeze, 2)
        message = self.assert_error(
            path, 15, "'resp.no_secret_field'", "resp.keys_present", known_ids=KNOWN
        )
        self.assertIn("did you mean 'resp.no_secret_fields'", message)

    def test_duplicate_open_rows(self):
        text = TEXT_LEDGER.replace("resp.no_secret_fields", "counter.monotonic_under_replay")
        text = text.replace('"retired"', '"open"')
        path = self.write("ledger.txtpb", text)
        self.assert_error(path, 15, "second open row", "line 4")

    def test_open_and_retired_rows_of_one_id_are_fine(self):
        text = TEXT_LEDGER.replace("resp.no_secret_fields", "counter.monotonic_under_replay")
        self.assertLen(ledger.load_ledger(self.write("ledger.txtpb", text)).freeze, 2)

    def test_negative_budget(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER.replace("count: 10", "count: -1"))
        self.assert_error(path, 15, "retire_by_commit_count is -1")

    def test_every_problem_is_reported(self):
        text = TEXT_LEDGER.replace("count: 10", "count: -1").replace('"open"', '"opne"', 1)
        message = self.assert_error(self.write("ledger.txtpb", text), 4, "'opne'")
        self.assertIn(f"{self.dir / 'ledger.txtpb'}:15:", message)

    def test_malformed_json_names_line(self):
        broken = ARTICLE_ROW.replace('"owner": "unassigned"', '"owner": unassigned')
        self.assert_error(self.write("ledger.json", broken), 8, "not valid JSON")

    def test_bad_json_row_names_row_line(self):
        second = ARTICLE_ROW.replace('"owner"', '"ownr"')
        path = self.write("ledger.json", f'{{\n  "freeze": [\n{ARTICLE_ROW},\n{second}]}}\n')
        self.assert_error(path, 13, "ownr")
        path = self.write("rows.json", f'[{ARTICLE_ROW}, "not a row"]')
        self.assert_error(path, 10, "JSON object")

    def test_json_validation_uses_row_lines(self):
        second = ARTICLE_ROW.replace('"open"', '"retired"').replace("30", "-5")
        path = self.write("ledger.json", f"[\n{ARTICLE_ROW},\n{second}]\n")
        self.assert_error(path, 12, "retire_by_commit_count is -5")

    def test_unknown_suffix_and_missing_file(self):
        self.assert_error(self.write("ledger.yaml", ""), 1, "unknown ledger format")
        self.assert_error(self.dir / "absent.txtpb", 1, "cannot read")


class FormatRowTest(absltest.TestCase):
    def test_layout_and_round_trip(self):
        row = agent_gate_pb2.Freeze(
            property_id="counter.monotonic_under_replay",
            state="open",
            seal="ab" * 32,
            reason='split "exit" codes\\ on ünïcode',
            opened_against_commit="0123abc",
            retire_by_commit_count=30,
            owner="unassigned",
        )
        text = ledger.format_row(row)
        lines = text.splitlines()
        self.assertEqual("freeze {", lines[0])
        self.assertEqual('  property_id: "counter.monotonic_under_replay"', lines[1])
        self.assertEqual('  state: "open"', lines[2])
        self.assertEqual("  retire_by_commit_count: 30", lines[6])
        self.assertEqual("}", lines[-1])
        parsed = text_format.Parse(text, agent_gate_pb2.Ledger())
        self.assertEqual(row, parsed.freeze[0])


class EditTest(LedgerTestCase):
    NEW_ROW = agent_gate_pb2.Freeze(
        property_id="resp.keys_present",
        state="open",
        seal="cd" * 32,
        reason="split exits on the clean tree",
        opened_against_commit="feedface",
        retire_by_commit_count=20,
        owner="api-team",
    )

    def leftovers(self) -> list[str]:
        return sorted(name for name in os.listdir(self.dir) if name != "ledger.txtpb")

    def test_append_keeps_bytes_and_reparses(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER)
        ledger.append_row(path, self.NEW_ROW, known_ids=KNOWN)
        after = path.read_text(encoding="utf-8")
        self.assertTrue(after.startswith(TEXT_LEDGER))
        self.assertEqual(TEXT_LEDGER + "\n" + ledger.format_row(self.NEW_ROW), after)
        loaded = ledger.load_ledger(path, known_ids=KNOWN)
        self.assertEqual(self.NEW_ROW, loaded.freeze[2])
        self.assertEqual([4, 15, 23], ledger.row_lines(path))
        self.assertEqual([], self.leftovers())

    def test_append_to_file_without_final_newline(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER.rstrip("\n"))
        ledger.append_row(path, self.NEW_ROW)
        self.assertEqual(TEXT_LEDGER + "\n" + ledger.format_row(self.NEW_ROW), path.read_text())

    def test_append_creates_missing_file(self):
        path = self.dir / "ledger.txtpb"
        ledger.append_row(path, self.NEW_ROW)
        self.assertEqual(ledger.format_row(self.NEW_ROW), path.read_text())

    def test_append_refuses_second_open_row(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER)
        row = agent_gate_pb2.Freeze()
        row.CopyFrom(self.NEW_ROW)
        row.property_id = "counter.monotonic_under_replay"
        with self.assertRaisesRegex(ledger.LedgerError, "second open row"):
            ledger.append_row(path, row)
        self.assertEqual(TEXT_LEDGER, path.read_text())
        self.assertEqual([], self.leftovers())

    def test_append_refuses_json(self):
        path = self.write("ledger.json", ARTICLE_ROW)
        with self.assertRaisesRegex(ledger.LedgerError, "text-format"):
            ledger.append_row(path, self.NEW_ROW)
        self.assertEqual(ARTICLE_ROW, path.read_text())

    def test_set_state_changes_only_the_value(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER)
        ledger.set_state(path, "counter.monotonic_under_replay", "retired", known_ids=KNOWN)
        expected = TEXT_LEDGER.replace(
            'state: "open"                      # or "retired"',
            'state: "retired"                      # or "retired"',
        )
        self.assertEqual(expected, path.read_text())
        states = [row.state for row in ledger.load_ledger(path).freeze]
        self.assertEqual(["retired", "retired"], states)
        self.assertEqual([], self.leftovers())

    def test_set_state_reopen_and_errors(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER)
        ledger.set_state(path, "resp.no_secret_fields", "open")
        self.assertEqual(TEXT_LEDGER.replace('state: "retired"', 'state: "open"'), path.read_text())
        with self.assertRaisesRegex(ledger.LedgerError, "already open"):
            ledger.set_state(path, "resp.no_secret_fields", "open")
        with self.assertRaisesRegex(ledger.LedgerError, "has no row"):
            ledger.set_state(path, "nope", "retired")
        with self.assertRaisesRegex(ledger.LedgerError, '"open" or "retired"'):
            ledger.set_state(path, "nope", "closed")

    def test_set_state_refuses_duplicate_open_result(self):
        text = TEXT_LEDGER.replace("resp.no_secret_fields", "counter.monotonic_under_replay")
        path = self.write("ledger.txtpb", text)
        with self.assertRaisesRegex(ledger.LedgerError, "second open row"):
            ledger.set_state(path, "counter.monotonic_under_replay", "open")
        self.assertEqual(text, path.read_text())

    def test_set_state_handles_single_quotes_and_crlf(self):
        text = TEXT_LEDGER.replace('state: "open"', "state: 'open'").replace("\n", "\r\n")
        path = self.write("ledger.txtpb", "")
        path.write_bytes(text.encode())
        ledger.set_state(path, "counter.monotonic_under_replay", "retired")
        self.assertEqual(
            text.replace("state: 'open'", 'state: "retired"').encode(), path.read_bytes()
        )

    def test_failed_write_leaves_original_and_no_temp_files(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER)
        before = path.read_bytes()
        with (
            mock.patch.object(ledger.os, "fsync", side_effect=OSError(28, "No space left")),
            self.assertRaises(OSError),
        ):
            ledger.append_row(path, self.NEW_ROW)
        self.assertEqual(before, path.read_bytes())
        self.assertEqual([], self.leftovers())
        with (
            mock.patch.object(ledger.os, "replace", side_effect=OSError(5, "I/O error")),
            self.assertRaises(OSError),
        ):
            ledger.set_state(path, "counter.monotonic_under_replay", "retired")
        self.assertEqual(before, path.read_bytes())
        self.assertEqual([], self.leftovers())

    def test_symlinked_ledger_keeps_its_link(self):
        real = self.write("ledger.txtpb", TEXT_LEDGER)
        link_dir = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))
        link = link_dir / "ledger.txtpb"
        os.symlink(real, link)
        ledger.set_state(link, "counter.monotonic_under_replay", "retired")
        self.assertTrue(link.is_symlink())
        self.assertEqual("retired", ledger.load_ledger(real).freeze[0].state)
        self.assertEqual([], self.leftovers())
        self.assertEqual(["ledger.txtpb"], os.listdir(link_dir))

    def test_mode_is_kept(self):
        path = self.write("ledger.txtpb", TEXT_LEDGER)
        os.chmod(path, 0o640)
        ledger.set_state(path, "counter.monotonic_under_replay", "retired")
        self.assertEqual(0o640, os.stat(path).st_mode & 0o777)


if __name__ == "__main__":
    absltest.main()
