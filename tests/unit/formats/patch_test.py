"""agent_gate.formats.patch: the names a patch gives its files, as git 2.39 reads them.

The gate's guards (fixtures, seals, ledger, BUILD files, predicates, the rule set)
see only the paths this module reports, so they must be exactly git's: the real
`git apply --numstat -z` (forwards and with -R) is the oracle for hand-made hostile
headers (dates after spaces, names ending in spaces or holding " b/", quotes,
backslashes, tabs, CR, non-UTF-8 bytes, CRLF, no final newline, binary bodies) and
for hypothesis mutations of real patches; patches git writes for random file-name
bytes read back to exactly the names git changes when it applies them. Any bytes
give paths or PatchError, never another exception, in linear time.
"""

import base64
import collections
import contextlib
import os
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

from absl.testing import absltest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agent_gate.formats import patch
from agent_gate.formats.patch import PatchError, touched_paths

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "patch test",
    "GIT_AUTHOR_EMAIL": "patch-test@example.invalid",
    "GIT_COMMITTER_NAME": "patch test",
    "GIT_COMMITTER_EMAIL": "patch-test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _lines(*lines: str) -> str:
    return "\n".join(lines) + "\n"


class HandWrittenPatchTest(absltest.TestCase):
    """Each shape of section git writes, spelled out byte for byte."""

    def test_modification(self):
        text = _lines(
            "diff --git a/src/x.py b/src/x.py",
            "index 1111111..2222222 100644",
            "--- a/src/x.py",
            "+++ b/src/x.py",
            "@@ -1,2 +1,2 @@",
            " keep",
            "-old",
            "+new",
        )
        self.assertEqual(touched_paths(text), ["src/x.py"])

    def test_pure_rename_reports_both_sides(self):
        text = _lines(
            "diff --git a/lib/calc/rules.py b/lib/fmt/rules.py",
            "similarity index 100%",
            "rename from lib/calc/rules.py",
            "rename to lib/fmt/rules.py",
        )
        self.assertEqual(touched_paths(text), ["lib/calc/rules.py", "lib/fmt/rules.py"])

    def test_rename_with_edits_reports_both_sides_once(self):
        text = _lines(
            "diff --git a/a/old.txt b/b/new.txt",
            "similarity index 80%",
            "rename from a/old.txt",
            "rename to b/new.txt",
            "index 1111111..2222222 100644",
            "--- a/a/old.txt",
            "+++ b/b/new.txt",
            "@@ -1 +1 @@",
            "-x",
            "+y",
        )
        self.assertEqual(touched_paths(text), ["a/old.txt", "b/new.txt"])

    def test_old_style_rename_headers(self):
        text = _lines(
            "diff --git a/one b/two",
            "rename old one",
            "rename new two",
        )
        self.assertEqual(touched_paths(text), ["one", "two"])

    def test_copy_reports_source_and_destination(self):
        text = _lines(
            "diff --git a/fixtures/a.json b/lib/a.json",
            "similarity index 100%",
            "copy from fixtures/a.json",
            "copy to lib/a.json",
        )
        self.assertEqual(touched_paths(text), ["fixtures/a.json", "lib/a.json"])

    def test_deletion_reports_the_old_side(self):
        text = _lines(
            "diff --git a/ledger.txtpb b/ledger.txtpb",
            "deleted file mode 100644",
            "index 1111111..0000000",
            "--- a/ledger.txtpb",
            "+++ /dev/null",
            "@@ -1,2 +0,0 @@",
            "-freeze {",
            "-}",
        )
        self.assertEqual(touched_paths(text), ["ledger.txtpb"])

    def test_new_file(self):
        text = _lines(
            "diff --git a/docs/new.md b/docs/new.md",
            "new file mode 100644",
            "index 0000000..1111111",
            "--- /dev/null",
            "+++ b/docs/new.md",
            "@@ -0,0 +1 @@",
            "+hello",
        )
        self.assertEqual(touched_paths(text), ["docs/new.md"])

    def test_mode_change_alone(self):
        text = _lines(
            "diff --git a/tools/run.sh b/tools/run.sh",
            "old mode 100644",
            "new mode 100755",
        )
        self.assertEqual(touched_paths(text), ["tools/run.sh"])

    def test_new_symlink(self):
        text = _lines(
            "diff --git a/fixtures/cases/escape b/fixtures/cases/escape",
            "new file mode 120000",
            "index 0000000..1111111",
            "--- /dev/null",
            "+++ b/fixtures/cases/escape",
            "@@ -0,0 +1 @@",
            "+../../outside.txt",
            "\\ No newline at end of file",
        )
        self.assertEqual(touched_paths(text), ["fixtures/cases/escape"])

    def test_binary_files_differ(self):
        text = _lines(
            "diff --git a/img/logo.png b/img/logo.png",
            "index 1111111..2222222 100644",
            "Binary files a/img/logo.png and b/img/logo.png differ",
        )
        self.assertEqual(touched_paths(text), ["img/logo.png"])

    def test_binary_files_line_alone_is_no_header(self):
        """git reads no name from a `Binary files` line, and alone it starts no file."""
        with self.assertRaisesRegex(PatchError, "no file header"):
            touched_paths("Binary files a/x.bin and b/x.bin differ\n")

    def test_git_binary_patch_body_is_skipped(self):
        text = _lines(
            "diff --git a/blob.bin b/blob.bin",
            "index 1111111..2222222 100644",
            "GIT binary patch",
            "literal 7",
            "Ocmb<msAQ;OC<g!skpbfX",
            "",
            "literal 5",
            "McmYdfNMc9^00VOYCjbBd",
            "",
            "diff --git a/src/x.py b/src/x.py",
            "--- a/src/x.py",
            "+++ b/src/x.py",
            "@@ -1 +1 @@",
            "-a",
            "+b",
        )
        self.assertEqual(touched_paths(text), ["blob.bin", "src/x.py"])

    def test_diff_hidden_after_a_binary_hunk_is_read(self):
        """`git apply` applies a plain diff placed after a binary hunk: it must be seen.

        Before the fix every line after `GIT binary patch` up to the next
        `diff --git` was skipped, so this ledger edit went unreported.
        """
        text = _lines(
            "diff --git a/blob.bin b/blob.bin",
            "index 1111111..2222222 100644",
            "GIT binary patch",
            "literal 7",
            "Ocmb<msAQ;OC<g!skpbfX",
            "",
            "literal 5",
            "McmYdfNMc9^00VOYCjbBd",
            "",
            "--- a/ledger.txtpb",
            "+++ b/ledger.txtpb",
            "@@ -1 +1 @@",
            "-hello",
            "+pwned",
        )
        self.assertEqual(touched_paths(text), ["blob.bin", "ledger.txtpb"])

    def test_quoted_names_are_unquoted(self):
        text = _lines(
            'diff --git "a/docs/caf\\303\\251 \\"q\\".md" "b/docs/caf\\303\\251 \\"q\\".md"',
            "index 1111111..2222222 100644",
            '--- "a/docs/caf\\303\\251 \\"q\\".md"',
            '+++ "b/docs/caf\\303\\251 \\"q\\".md"',
            "@@ -1 +1 @@",
            "-a",
            "+b",
        )
        self.assertEqual(touched_paths(text), ['docs/café "q".md'])

    def test_quoted_rename_target(self):
        text = _lines(
            'diff --git a/plain.txt "b/tab\\there.txt"',
            "similarity index 100%",
            "rename from plain.txt",
            'rename to "tab\\there.txt"',
        )
        self.assertEqual(touched_paths(text), ["plain.txt", "tab\there.txt"])

    def test_unquoted_names_with_spaces(self):
        text = _lines(
            "diff --git a/my dir/a b.txt b/my dir/a b.txt",
            "--- a/my dir/a b.txt\t",
            "+++ b/my dir/a b.txt\t",
            "@@ -1 +1 @@",
            "-a",
            "+b",
        )
        self.assertEqual(touched_paths(text), ["my dir/a b.txt"])

    def test_p1_strips_any_first_component(self):
        text = _lines(
            "--- old-tree/ledger.txtpb\t2024-01-01 00:00:00.000000000 +0000",
            "+++ new-tree/ledger.txtpb\t2024-01-02 00:00:00.000000000 +0000",
            "@@ -1 +1 @@",
            "-a",
            "+b",
            "diff --git x/fixtures/f.json y/fixtures/f.json",
            "--- x/fixtures/f.json",
            "+++ y/fixtures/f.json",
            "@@ -1 +1 @@",
            "-a",
            "+b",
        )
        self.assertEqual(touched_paths(text), ["ledger.txtpb", "fixtures/f.json"])

    def test_body_names_win_over_the_header(self):
        """git takes the `---`/`+++` names; the `diff --git` name is only a default."""
        text = _lines(
            "diff --git a/docs/readme.md b/docs/readme.md",
            "--- a/ledger.txtpb",
            "+++ b/ledger.txtpb",
            "@@ -1 +1 @@",
            "-a",
            "+b",
        )
        self.assertEqual(touched_paths(text), ["ledger.txtpb"])

    def test_removed_line_that_looks_like_a_header_is_content(self):
        """Lines `-- a/ledger.txtpb` removed and `++ b/ledger.txtpb` added are hunk content."""
        text = _lines(
            "diff --git a/notes.md b/notes.md",
            "--- a/notes.md",
            "+++ b/notes.md",
            "@@ -1,3 +1,2 @@",
            " keep",
            "--- a/ledger.txtpb",
            "+++ b/ledger.txtpb",
            "-gone",
        )
        self.assertEqual(touched_paths(text), ["notes.md"])

    def test_mail_text_before_the_first_header_is_ignored(self):
        text = _lines(
            "From 1111111 Mon Sep 17 00:00:00 2001",
            "Subject: [PATCH] tidy",
            "",
            "---",
            " src/x.py | 2 +-",
            "",
            "diff --git a/src/x.py b/src/x.py",
            "--- a/src/x.py",
            "+++ b/src/x.py",
            "@@ -1 +1 @@",
            "-a",
            "+b",
            "-- ",
            "2.39.2",
        )
        self.assertEqual(touched_paths(text), ["src/x.py"])

    def test_no_newline_markers_and_crlf(self):
        text = (
            "diff --git a/w.txt b/w.txt\r\n--- a/w.txt\r\n+++ b/w.txt\r\n@@ -1 +1 @@\r\n"
            "-a\r\n\\ No newline at end of file\r\n+b\r\n\\ No newline at end of file\r\n"
        )
        self.assertEqual(touched_paths(text), ["w.txt"])

    def test_each_path_once_in_first_seen_order(self):
        section = _lines("diff --git a/{0} b/{0}", "old mode 100644", "new mode 100755")
        text = "".join(section.format(name) for name in ("b", "a", "b", "c", "a"))
        self.assertEqual(touched_paths(text), ["b", "a", "c"])

    def test_trailing_date_after_spaces_is_dropped(self):
        """git strips a date after a space too, so `ledger.txtpb` is what it edits."""
        text = _lines(
            "--- a/ledger.txtpb 2020-01-01 00:00:00.000000000 +0000",
            "+++ b/ledger.txtpb 2020-01-01 00:00:00.000000000 +0000",
            "@@ -1 +1 @@",
            "-a",
            "+b",
        )
        self.assertEqual(touched_paths(text), ["ledger.txtpb"])

    def test_dates_git_recognizes(self):
        for date in (
            "\t2020-01-01 00:00:00.000000000 +0000",
            " 2020-01-01 00:00:00 +0000",
            "   2020-01-01 00:00:00",
            " 20-01-01 00:00:00 -0800",
            " 2020-01-01 00:00:00+08:00",
            " 2020-01-01 00:00:00 +08:00",
            " 2020-01-01",
        ):
            with self.subTest(date=date):
                text = _lines("--- a/x y", f"+++ b/x y{date}", "@@ -1 +1 @@", "-a", "+b")
                self.assertEqual(touched_paths(text), ["x y"])

    def test_what_is_not_a_date_stays_in_the_name(self):
        for tail, name in (
            (" 00:00:00 +0000", "x 00:00:00 +0000"),  # a time without a date
            (" 2020-01-01 00:00:00 +0000\r", "x 2020-01-01 00:00:00 +0000"),  # CRLF: kept
            ("2020-01-01", "x2020-01-01"),  # no space before the date
            (" ", "x "),  # a name ending in a space, with no tab after it
        ):
            with self.subTest(tail=tail):
                text = _lines("--- a/old", f"+++ b/x{tail}", "@@ -1 +1 @@", "-a", "+b")
                self.assertEqual(touched_paths(text), [name])

    def test_text_hunks_in_any_encoding(self):
        """git writes text hunks for non-UTF-8 files without NUL; they are read."""
        text = (
            b"diff --git a/latin1.txt b/latin1.txt\nindex 1111111..2222222 100644\n"
            b"--- a/latin1.txt\n+++ b/latin1.txt\n@@ -1,2 +1,2 @@\n caf\xe9\n-\xff\xfe\r\n"
            b"+\xc3\x28\n\\ No newline at end of file\n"
        )
        self.assertEqual(touched_paths(text), ["latin1.txt"])

    def test_names_that_are_not_utf8_keep_their_bytes(self):
        text = b"diff --git a/\xff\xfe.txt b/\xff\xfe.txt\nold mode 100644\nnew mode 100755\n"
        (name,) = touched_paths(text)
        self.assertEqual(name.encode("utf-8", "surrogateescape"), b"\xff\xfe.txt")
        quoted = b'diff --git "a/\\377" "b/\\377"\nold mode 100644\nnew mode 100755\n'
        self.assertEqual(touched_paths(quoted)[0].encode("utf-8", "surrogateescape"), b"\xff")

    def test_slashless_names_switch_the_patch_to_p0(self):
        """git guesses -p0 from `+++ ledger.txtpb` and keeps it for the files after it."""
        text = _lines(
            "--- ledger.txtpb",
            "+++ ledger.txtpb",
            "@@ -1 +1 @@",
            "-a",
            "+b",
            "--- a/docs/x.md",
            "+++ b/docs/x.md",
            "@@ -1 +1 @@",
            "-a",
            "+b",
        )
        self.assertEqual(touched_paths(text), ["ledger.txtpb", "b/docs/x.md"])
        # Under --directory git never guesses, and a slashless name has nothing to drop.
        with self.assertRaisesRegex(PatchError, "unable to find a file name"):
            touched_paths(text, directory="sub")

    def test_a_skipped_header_lends_its_name_to_the_next(self):
        """A `diff --git` line git skips still sets the names the next header leaves unset."""
        text = _lines(
            "diff --git a/ledger.txtpb b/ledger.txtpb",
            "this line ends the header",
            "diff --git a/docs/x.md b/docs/x.md",
            "old mode 100644",
            "new mode 100755",
        )
        self.assertEqual(touched_paths(text), ["ledger.txtpb"])

    def test_quoted_name_running_across_lines(self):
        text = b'--- /dev/null\n+++ "b/x\n@@ -0,0 +1 @@\n+y"\n'
        self.assertEqual(touched_paths(text), ["x\n@@ -0,0 +1 @@\n+y"])

    def test_read_changes(self):
        text = _lines(
            "diff --git a/fixtures/a.json b/lib/a.json",
            "similarity index 100%",
            "copy from fixtures/a.json",
            "copy to lib/a.json",
            "diff --git a/gone.txt b/gone.txt",
            "deleted file mode 100644",
        )
        self.assertEqual(
            patch.read_changes(text),
            [
                patch.FileChange("fixtures/a.json", "lib/a.json", copy=True),
                patch.FileChange("gone.txt", None),
            ],
        )

    def test_bytes_input(self):
        text = _lines("diff --git a/x b/x", "old mode 100644", "new mode 100755")
        self.assertEqual(touched_paths(text.encode()), ["x"])


class NotAPatchTest(absltest.TestCase):
    """What git apply refuses to read is refused too, never read as an empty diff."""

    def assert_refused(self, text, pattern: str) -> None:
        with self.assertRaisesRegex(PatchError, pattern):
            touched_paths(text)

    def test_empty_and_blank(self):
        for text in ("", "   \n\n\t\n", b""):
            with self.subTest(text=text):
                self.assert_refused(text, "empty patch")

    def test_prose_is_not_a_patch(self):
        self.assert_refused("Please merge this, it is fine.\n", "no file header")

    def test_hunk_without_file_header(self):
        self.assert_refused(_lines("@@ -1 +1 @@", "-a", "+b"), "without a file header")

    def test_bad_hunk_header(self):
        text = _lines("diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -one +two @@", "-a")
        self.assert_refused(text, "corrupt patch")

    def test_truncated_hunk(self):
        text = _lines("diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1,3 +1,3 @@", " a")
        self.assert_refused(text, "corrupt patch")

    def test_corrupt_hunk_line(self):
        text = _lines("diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1,2 +1,2 @@", "?a", " b")
        self.assert_refused(text, "corrupt patch")

    def test_hunk_running_into_the_next_header(self):
        text = _lines(
            "diff --git a/x b/x",
            "--- a/x",
            "+++ b/x",
            "@@ -1,3 +1,3 @@",
            " a",
            "diff --git a/ledger.txtpb b/ledger.txtpb",
        )
        self.assert_refused(text, "corrupt patch")

    def test_hunk_line_without_its_newline(self):
        """git calls a last hunk line without a newline a corrupt patch, and so does the reader."""
        self.assert_refused(b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b", "corrupt patch")

    def test_merge_diffs(self):
        for header in ("diff --cc src/x.py", "diff --combined src/x.py"):
            with self.subTest(header=header):
                text = _lines(header, "index 1,2..3", "--- a/src/x.py", "+++ b/src/x.py")
                self.assert_refused(text, "combined \\(merge\\) diff")

    def test_nul_bytes(self):
        self.assert_refused(b"diff --git a/x b/x\n\x00\x01", "NUL.*git diff --binary")
        self.assert_refused("diff --git a/x b/x\n\x00", "NUL")

    def test_text_that_no_bytes_decode_to(self):
        self.assert_refused("diff --git a/x b/x\n\ud800", "lone surrogate")

    def test_header_whose_names_cannot_be_told_apart(self):
        text = _lines("diff --git a/x y z b/q r s", "old mode 100644", "new mode 100755")
        self.assert_refused(text, "lacks filename information")

    def test_bad_quoting_leaves_no_name(self):
        text = _lines('diff --git "a/x\\q" "b/x"', "old mode 100644", "new mode 100755")
        self.assert_refused(text, "lacks filename information")

    def test_corrupt_binary_hunk_is_refused(self):
        """git stops at a corrupt binary hunk and silently skips the rest; the gate refuses."""
        text = _lines(
            "diff --git a/blob.bin b/blob.bin",
            "index 1111111..2222222 100644",
            "GIT binary patch",
            "literal 7",
            "zzzzzzz",
            "",
            "--- a/ledger.txtpb",
            "+++ b/ledger.txtpb",
            "@@ -1 +1 @@",
            "-a",
            "+b",
        )
        self.assert_refused(text, "corrupt binary patch.*silently skips")

    def test_inconsistent_names_are_refused(self):
        text = _lines("diff --git a/x b/x", "deleted file mode 100644", "--- a/y", "+++ /dev/null")
        self.assert_refused(text, "inconsistent old filename")

    def test_new_file_with_old_lines(self):
        text = _lines("--- /dev/null", "+++ b/x", "@@ -1 +1 @@", "-a", "+b")
        self.assert_refused(text, "new file that depends on old contents")

    def test_read_patch_checks_the_file(self):
        directory = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        good = directory / "good.patch"
        good.write_text(_lines("diff --git a/x b/x", "old mode 100644", "new mode 100755"))
        self.assertEqual(touched_paths(patch.read_patch(good)), ["x"])
        bad = directory / "bad.patch"
        bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
        with self.assertRaises(PatchError):
            patch.read_patch(bad)


def _git(cwd: Path, *arguments: str) -> str:
    done = subprocess.run(
        ["git", "-c", "core.quotePath=true", *arguments],
        cwd=cwd,
        env={**os.environ, **_GIT_ENV},
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8", "surrogateescape")


def _run_git(cwd: str | Path, *arguments: str | bytes, data: bytes | None = None):
    return subprocess.run(
        ["git", *arguments],
        cwd=cwd,
        env={**os.environ, **_GIT_ENV},
        input=data,
        capture_output=True,
        check=False,
    )


class _GitApply:
    """The names git itself gives a patch's files: `git apply --numstat -z`, forwards
    (new name, else old) and reversed (old name, else new), without applying anything."""

    def __init__(self) -> None:
        self.repo = tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)
        _run_git(self.repo, "init", "-q")

    def names(self, data: bytes, directory: str = "") -> tuple[set[bytes] | None, bytes]:
        names: set[bytes] = set()
        stderr = b""
        flags = [f"--directory={directory}"] if directory else []
        for reverse in ([], ["-R"]):
            done = _run_git(self.repo, "apply", "--numstat", "-z", *flags, *reverse, "-", data=data)
            stderr += done.stderr
            if done.returncode != 0:
                return None, stderr
            for record in done.stdout.split(b"\0"):
                if record:
                    name = record.split(b"\t", 2)[2]
                    names.add(name[len(directory) + 1 :] if directory else name)
        return names, stderr


def _assert_agrees(test: absltest.TestCase, git: _GitApply, data: bytes, directory: str = ""):
    """The reader names exactly git's files, or refuses what git refuses; returns which."""
    names, stderr = git.names(data, directory)
    try:
        mine = {name.encode("utf-8", "surrogateescape") for name in touched_paths(data, directory)}
    except PatchError as error:
        # git stops at a corrupt binary hunk, prints why, and applies what came before it.
        cut_short = b"corrupt binary patch" in stderr or b"unrecognized binary patch" in stderr
        if names is not None and not cut_short:
            test.fail(f"git reads {sorted(names)} from {data!r}; the reader refuses: {error}")
        return "refused"
    if names is None:
        test.fail(f"git refuses {data!r} ({stderr!r}); the reader reads {sorted(mine)}")
    test.assertEqual(mine, names, f"{data!r} under directory {directory!r}")
    return "read"


_HUNK = b"@@ -1 +1 @@\n-a\n+b\n"
_MODES = b"old mode 100644\nnew mode 100755\n"
# Hand-made header forms, hostile ones first among them; each is checked against git.
_HOSTILE = (
    # Dates git strips from ---/+++ names: after a tab or spaces, in every shape it knows.
    b"--- a/ledger.txtpb 2020-01-01 00:00:00.000000000 +0000\n"
    b"+++ b/ledger.txtpb 2020-01-01 00:00:00.000000000 +0000\n" + _HUNK,
    b"--- a/x\n+++ b/ledger.txtpb 2020-01-01 00:00:00.000000000 +0000\n" + _HUNK,
    b"--- a/x\t2020-01-01 00:00:00.000000000 +0000\n+++ b/y z\t2020-01-01 00:00:00 -0800\n" + _HUNK,
    b"--- a/x\n+++ b/y   2020-01-01 00:00:00\n" + _HUNK,
    b"--- a/x\n+++ b/y 20-01-01 00:00:00.5 +08:00\n" + _HUNK,
    b"--- a/x\n+++ b/y 2020-01-01+0000\n" + _HUNK,
    b"--- a/x\n+++ b/y 2020-01-01\n" + _HUNK,
    b"--- a/x\n+++ b/y \t 2020-01-01 00:00:00 +0000\n" + _HUNK,
    b"--- a/x\n+++ b/y\t\t2020-01-01 00:00:00 +0000\n" + _HUNK,
    b"--- a/x\n+++ b/y 00:00:00 +0000\n" + _HUNK,
    b"--- a/x\n+++ b/y 2020-1-01 00:00:00 +0000\n" + _HUNK,
    b"--- a/x\n+++ 2020-01-01 00:00:00 +0000\n" + _HUNK,
    b"--- a/x\n+++ b/ 2020-01-01\n" + _HUNK,
    # GNU diff's epoch dates mark a creation or deletion.
    b"--- x\t1970-01-01 00:00:00.000000000 +0000\n+++ x\t2020-01-01 00:00:00 +0000\n"
    b"@@ -0,0 +1 @@\n+a\n",
    b"--- x\t1970-01-01 01:00:00 +0100\n+++ x\t2020-01-01 00:00:00 +0000\n" + _HUNK,
    b"--- x\t2020-01-01 00:00:00 +0000\n+++ x\t1969-12-31 16:00:00 -08:00\n@@ -1 +0,0 @@\n-a\n",
    # Names ending in spaces, holding " b/", tabs, quotes, backslashes, CR, non-UTF-8 bytes.
    b"--- a/x \n+++ b/x  \n" + _HUNK,
    b"--- a/x \t\n+++ b/x \t\n" + _HUNK,
    b"diff --git a/x  b/x \n" + _MODES,
    # git writes this for a new empty file " / " and cannot read it back.
    b"diff --git a/ /  b/ / \nnew file mode 100644\nindex 0000000..e69de29\n",
    b"diff --git a/x b/y b/x b/y\n" + _MODES,
    b"diff --git a/x b/y b/z\n" + _MODES,
    b"diff --git a/x b/y b/x b/y\nsimilarity index 100%\nrename from x b/y\nrename to q b/r\n",
    b"diff --git a/x\ty b/x\ty\n" + _MODES,
    b"diff --git a/x\tb/x\n" + _MODES,
    b'diff --git "a/x\\ty" "b/x\\ty"\n' + _MODES,
    b'diff --git "a/x\\"y" "b/x\\"y"\n' + _MODES,
    b'diff --git a/x"y b/x"y\n' + _MODES,
    b'diff --git a/x "b/x"\n' + _MODES,
    b'diff --git "a/x" b/x\n' + _MODES,
    b'diff --git "a/x\\n" b/x\n\n' + _MODES,
    b'diff --git "a/x\\000y" "b/x\\000z"\n' + _MODES,
    b'diff --git "a/x\\q" "b/x"\n' + _MODES,
    b'diff --git "a/x" "b/y"\n' + _MODES,
    b'diff --git "a/" "b/"\n' + _MODES,
    b"diff --git a/x\\y b/x\\y\n" + _MODES,
    b"diff --git a/x\r b/x\r\n" + _MODES,
    b"diff --git a/\xff\xfe b/\xff\xfe\n" + _MODES,
    b"diff --git a/caf\xc3\xa9 b/caf\xc3\xa9\n" + _MODES,
    b'diff --git "a/\\377\\376" "b/\\377\\376"\n' + _MODES,
    b'--- "a/x\\tq"\t2020-01-01\n+++ "b/x\\tq" trailing\n' + _HUNK,
    b'--- "a/x\n+++ "b/y\n' + _HUNK,
    b'--- a/x\n+++ "b/x\\400"\n' + _HUNK,
    b'--- a/x\n+++ "b/x\n@@ -1 +1 @@\n-a\n+b"\n',
    b'--- /dev/null\n+++ "b/x\n@@ -0,0 +1 @@\n+y"\n',
    b"--- a/x\n+++ b/x.orig\n" + _HUNK,
    b"--- a/x//y\n+++ b/x//y\n" + _HUNK,
    b"diff --git a/x//y b/x//y\n" + _MODES,
    b"--- a/x\n+++ /dev/nullx\n" + _HUNK,
    b"--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n",
    # -p0 is guessed from a slashless +++ name and kept for the rest of the patch.
    b"--- ledger.txtpb\n+++ ledger.txtpb\n" + _HUNK + b"--- a/q\n+++ b/q\n" + _HUNK,
    b"--- a/ledger.txtpb\n+++ ledger.txtpb\n" + _HUNK + b"diff --git a/q b/q\n" + _MODES,
    b"--- /dev/null\n+++ new\n@@ -0,0 +1 @@\n+a\n--- a/q\n+++ b/q\n" + _HUNK,
    # git --git headers: what the body names wins; skipped headers leave their names behind.
    b"diff --git a/docs/readme.md b/docs/readme.md\n--- a/ledger.txtpb\n+++ b/ledger.txtpb\n"
    + _HUNK,
    b"diff --git a/ledger b/ledger\nsomething\ndiff --git a/x b/x\n" + _MODES,
    b"diff --git a/ledger b/ledger\n@@ -1 +1 @@\n-a\n+b\n",
    b"diff --git a/x b/x\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n",
    b"diff --git a/x b/x\nnew file mode 100644\n--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+a\n",
    b"diff --git a/x b/x\ndeleted file mode 100644\n--- a/y\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n",
    b"diff --git a/x b/x\nnew file mode 100644\ndeleted file mode 100644\n",
    b"diff --git a/x b/y\nrename old x\nrename new y\n",
    b"diff --git a/x b/y\nsimilarity index 100%\ncopy from x\ncopy to y\n",
    b"diff --git a/x b/y\nrename from x\nrename to y\n--- a/x\n+++ b/z\n" + _HUNK,
    b"diff --git a/x b/x\nindex 1111111..2222222 zz\n",
    b"diff --git a/x b/x\nindex 1111111..2222222 100644\n",
    b"diff --git a/x b/x\nold mode 1006x4\n",
    b"diff --git a/x b/x\nindex 1111111..2222222 100644\nBinary files a/y and b/z differ\n",
    b"diff --git a/x b/x\nindex 1111111..2222222 100644\nFiles a/y and b/z differ\n",
    b"Binary files a/x and b/x differ\n",
    b"diff --git a/x b/x\nold mode 100644\nnew mode 100755",
    b"diff --git a/x b/x\n" + _MODES + b"diff --git a/y b/y\n",
    b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b",
    # CRLF throughout, and hunks that git reads or calls corrupt.
    b"diff --git a/w b/w\r\n--- a/w\r\n+++ b/w\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n",
    b"diff --git a/w b/w\r\nold mode 100644\r\nnew mode 100755\r\n",
    b"--- a/w\r\n+++ b/w 2020-01-01 00:00:00 +0000\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n",
    b"--- a/w\n+++ b/w\n@@ -1,2 +1,2 @@\n a\n\r\n-b\n+c\n",
    b"--- a/w\n+++ b/w\n@@ -1,2 +1,2 @@\n a\n\n-b\n+c\n",
    b"--- a/w\n+++ b/w\n@@ -1 +1 @@\n a\n",
    b"--- a/w\n+++ b/w\n@@ -1 +1 @@\n-a\n\\ short\n+b\n",
    b"--- a/w\n+++ b/w\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n@@ -5 +5 @@\n-a\n+b\n",
    b"--- a/w\n+++ b/w\n@@ -18446744073709551616 +1 @@\n-a\n+b\n",
    b"--- a/w\n+++ b/w\n@@ -1,0 +1 @@\n a\n",
    b"@@ -1 +1 @@\n-a\n+b\n",
    b"diff --cc x\n--- a/x\n+++ b/x\n@@@ -1,1 -1,1 +1,1 @@@\n",
    # Binary bodies: a real empty literal, a corrupt one, a diff after a binary hunk.
    b"diff --git a/z b/z\nnew file mode 100644\nindex 0000000..e69de29\nGIT binary patch\n"
    b"literal 0\nHcmV?d00001\n\nliteral 0\nHcmV?d00001\n\n--- a/ledger\n+++ b/ledger\n" + _HUNK,
    b"diff --git a/z b/z\nindex 1111111..2222222 100644\nGIT binary patch\nliteral 5\n"
    b"HcmV?d00001\n\n--- a/ledger\n+++ b/ledger\n" + _HUNK,
    b"diff --git a/z b/z\nindex 1111111..2222222 100644\nGIT binary patch\ndelta 0\nzzzzzzz\n\n",
    b"diff --git a/z b/z\nindex 1111111..2222222 100644\nGIT binary patch\nnothing\n",
    b"diff --git a/z b/z\nindex 1111111..2222222 100644\nGIT binary patch\r\nliteral 0\r\n",
)


class GitAgreementTest(absltest.TestCase):
    """Every hand-made header form reads to the names git gives it, at the top and under
    --directory, or is refused where git refuses it."""

    def test_hostile_forms_agree_with_git(self):
        git = _GitApply()
        outcomes = collections.Counter()
        for data in _HOSTILE:
            for directory in ("", "sub"):
                with self.subTest(data=data, directory=directory):
                    outcomes[_assert_agrees(self, git, data, directory)] += 1
        # The list exercises both: forms git reads and forms it refuses.
        print(f"hostile forms: {dict(outcomes)}")
        self.assertGreater(outcomes["read"], len(_HOSTILE) // 2, outcomes)
        self.assertGreater(outcomes["refused"], 10, outcomes)


def _reproducible(examples: int):
    """Hypothesis settings for a fixed, derandomized run of `examples` inputs."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


# Pieces the mutations splice into real patches: header words, separators, quotes,
# escapes, dates, bytes that are not UTF-8. No NUL: the reader refuses it by design.
_PIECES = (
    b" ",
    b"\t",
    b"\n",
    b"\r\n",
    b"\r",
    b'"',
    b"\\",
    b"\\303",
    b"/",
    b"a/",
    b"b/",
    b" b/",
    b"--- ",
    b"+++ ",
    b"diff --git ",
    b"@@ -1 +1 @@\n",
    b"-a\n",
    b"+b\n",
    b" 2020-01-01 00:00:00.000000000 +0000",
    b"\t1970-01-01 00:00:00 +0000",
    b"/dev/null",
    b"rename from ",
    b"copy to ",
    b"new file mode 100644\n",
    b"deleted file mode 100644\n",
    b"index 1111111..2222222 100644\n",
    b"\\ No newline at end of file\n",
    b"GIT binary patch\n",
    b"literal 0\nHcmV?d00001\n\n",
    b"Binary files a/x and b/x differ\n",
    b"\xff",
    b"\xc3\xa9",
    b"x",
)
_SEEDS = (
    b"--- a/ledger.txtpb 2020-01-01 00:00:00.000000000 +0000\n"
    b"+++ b/ledger.txtpb 2020-01-01 00:00:00.000000000 +0000\n@@ -1 +1 @@\n-a\n+b\n",
    b"diff --git a/x y b/x y\nold mode 100644\nnew mode 100755\n",
    b"diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n"
    b"index 1111111..2222222 100644\n--- a/x\n+++ b/y\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n",
    b'diff --git "a/x\\303" "b/x\\303"\nnew file mode 100644\nindex 0000000..1111111\n'
    b'--- /dev/null\n+++ "b/x\\303"\n@@ -0,0 +1 @@\n+a\n',
    b"diff --git a/z b/z\ndeleted file mode 100644\n--- a/z\n+++ /dev/null\n"
    b"@@ -1,2 +0,0 @@\n-a\n-b\n",
    b"--- x\t1970-01-01 00:00:00.000000000 +0000\n+++ x\t2020-01-01 00:00:00 +0000\n"
    b"@@ -0,0 +1 @@\n+a\n",
    b"diff --git a/q b/r r\nsimilarity index 100%\ncopy from q\ncopy to r r\n",
    b"diff --git a/z b/z\nnew file mode 100644\nindex 0000000..e69de29\nGIT binary patch\n"
    b"literal 0\nHcmV?d00001\n\nliteral 0\nHcmV?d00001\n\n",
)
_MUTATION = st.tuples(
    st.sampled_from(("insert", "delete", "replace")),
    st.integers(min_value=0, max_value=400),
    st.sampled_from(_PIECES),
    st.integers(min_value=1, max_value=6),
)


def _mutated(seeds: tuple[bytes, ...], mutations) -> bytes:
    data = bytearray(b"".join(seeds))
    for kind, where, piece, length in mutations:
        at = where % (len(data) + 1)
        if kind == "insert":
            data[at:at] = piece
        elif kind == "delete":
            del data[at : at + length]
        else:
            data[at : at + 1] = piece
    return bytes(data)


def _read_or_refuse(data: bytes) -> list[str] | None:
    """What every input must come to: paths (str, round-tripping to bytes) or PatchError."""
    try:
        paths = touched_paths(data)
    except PatchError:
        return None
    for path in paths:
        assert isinstance(path, str)
        path.encode("utf-8", "surrogateescape")
    return paths


class FuzzTest(absltest.TestCase):
    """Any bytes: paths or PatchError, never another exception, never a hang."""

    @_reproducible(3000)
    @given(st.binary(max_size=2048))
    def test_random_bytes(self, data):
        _read_or_refuse(data)

    @_reproducible(1000)
    @given(st.text(max_size=300))
    def test_random_text(self, text):
        with contextlib.suppress(PatchError):
            touched_paths(text)

    @_reproducible(3000)
    @given(st.lists(st.sampled_from(_PIECES), max_size=60).map(b"".join))
    def test_random_pieces(self, data):
        _read_or_refuse(data)

    @_reproducible(3000)
    @given(
        st.lists(st.sampled_from(_SEEDS), min_size=1, max_size=3),
        st.lists(_MUTATION, max_size=8),
    )
    def test_mutated_patches(self, seeds, mutations):
        _read_or_refuse(_mutated(tuple(seeds), mutations))

    @_reproducible(400)
    @given(
        st.lists(st.sampled_from(_SEEDS), min_size=1, max_size=3),
        st.lists(_MUTATION, min_size=1, max_size=6),
        st.sampled_from(("", "sub")),
    )
    def test_mutated_patches_agree_with_git(self, seeds, mutations, directory):
        if not hasattr(self, "_git"):
            self._git = _GitApply()
        _assert_agrees(self, self._git, _mutated(tuple(seeds), mutations), directory)

    def test_worst_cases_stay_linear(self):
        """Inputs on which git's own reading is quadratic are read, or refused, in linear time."""
        hunk = b"@@ -1 +1 @@\n-a\n+b\n"
        bomb = zlib.compress(b"\0" * 50_000_000, 9)
        cases = {
            # Every header's quoted name runs on to the quote that ends the patch: git
            # takes minutes on this; the reader refuses it past its budget.
            "quotes": b'diff --git a/x\\"b\nrename from x\nrename to y\n' * 100_000 + b'"\n',
            "quotes in ---": (b'--- "a/\\t\n+++ "b/\\t\n' + hunk) * 30_000,
            # One header line of spaces, and one whose every space is a split to try.
            "spaces": b"diff --git a/" + b" " * 2_000_000 + b"\nold mode 1\n",
            "splits": b"diff --git a/" + b"x " * 1_000_000 + b"/y\nold mode 1\n",
            "dates": (b"--- a/x" + b" " * 100_000 + b"2020-01-01\n+++ b/x\n" + hunk) * 20,
            "hunk": b"--- a/x\n+++ b/x\n@@ -1,2000000 +1,2000000 @@\n" + b" a\n" * 2_000_000,
            # git looks for an index line's ".." and mode past the line's end.
            "index lines": b"diff --git a/x b/x\n" + b"index abc\n" * 1_000_000,
            # 63 KB of base85 that inflates to 50 MB.
            "zip bomb": b"diff --git a/z b/z\nindex 1111111..2222222 100644\nGIT binary patch\n"
            + b"literal 50000000\n"
            + b"".join(_base85_line(bomb[at : at + 52]) for at in range(0, len(bomb), 52))
            + b"\n",
        }
        for name, data in cases.items():
            with self.subTest(name):
                started = time.monotonic()
                paths = _read_or_refuse(data)
                seconds = time.monotonic() - started
                # A hang detector, not a speed claim (bench/ measures speed): a quadratic
                # reading takes hours on these inputs, a linear one seconds.
                self.assertLess(seconds, 60.0, f"{name}: {seconds:.1f}s for {len(data)} bytes")
                if name == "quotes":
                    self.assertIsNone(paths)
                if name == "zip bomb":
                    self.assertEqual(paths, ["z"])
        with self.assertRaisesRegex(PatchError, "linear time"):
            touched_paths(cases["quotes"])


def _base85_line(chunk: bytes) -> bytes:
    """One line of a `GIT binary patch` hunk: a length letter and base85 of up to 52 bytes."""
    lead = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"[len(chunk) - 1 : len(chunk)]
    return lead + base64.b85encode(chunk + b"\0" * (-len(chunk) % 4)) + b"\n"


def _component():
    """One file-name component git and Linux accept: any bytes but NUL and '/'."""
    return st.binary(min_size=1, max_size=16).filter(
        lambda name: (
            b"\0" not in name
            and b"/" not in name
            and name not in (b".", b"..")
            and name.lower() != b".git"
        )
    )


_PATH = st.lists(_component(), min_size=1, max_size=3).map(b"/".join)
# Contents git writes as text hunks (no NUL: any encoding, CRLF, no final newline) or,
# holding a NUL, as `GIT binary patch` hunks.
_CONTENT = st.one_of(
    st.binary(max_size=300).map(lambda data: data.replace(b"\0", b"")),
    st.binary(max_size=300).map(lambda data: b"\0" + data),
    st.binary(max_size=300),
)


class _Repo:
    """A scratch repository addressed by byte paths."""

    def __init__(self, quote_path: bool, mnemonic: bool) -> None:
        self.root = tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value).encode()
        self.config = [
            "-c",
            f"core.quotePath={str(quote_path).lower()}",
            "-c",
            f"diff.mnemonicPrefix={str(mnemonic).lower()}",
        ]
        self.git("init", "-q")

    def git(self, *arguments: str | bytes, data: bytes | None = None) -> bytes:
        done = _run_git(self.root, *self.config, *arguments, data=data)
        if done.returncode != 0:
            raise OSError(done.stderr.decode("utf-8", "replace"))
        return done.stdout

    def write(self, name: bytes, data: bytes) -> None:
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(data)

    def changed(self) -> set[bytes]:
        listed = self.git("diff", "--cached", "--name-only", "-z", "--no-renames")
        return {name for name in listed.split(b"\0") if name}


class GitWrittenPatchTest(absltest.TestCase):
    """Patches git itself writes, for random file names and contents, read back to
    exactly the names git changed when git applies them, and refused when it cannot."""

    def test_git_diff_reads_back(self):
        seen: collections.Counter[str] = collections.Counter()

        @_reproducible(200)
        @given(
            name=_PATH,
            other=_PATH,
            change=st.sampled_from(("add", "modify", "rename", "delete", "mode")),
            before=_CONTENT,
            after=_CONTENT,
            quote_path=st.booleans(),
            mnemonic=st.booleans(),
            workspace=st.sampled_from(("", "ws")),
        )
        def check(name, other, change, before, after, quote_path, mnemonic, workspace):
            # With a workspace below the top, the patch is written relative to it and
            # applied with --directory, as `agent-gate score` does for such a workspace.
            repo = _Repo(quote_path, mnemonic)
            if workspace:
                name, other = b"ws/" + name, b"ws/" + other
            try:
                repo.write(b"keep", b"base\n")
                if change != "add":
                    repo.write(name, before)
                repo.git("add", "-A")
                repo.git("commit", "-q", "-m", "base")
                path = os.path.join(repo.root, name)
                if change == "add":
                    repo.write(name, after)
                elif change == "modify":
                    repo.write(name, after if after != before else before + b"\n")
                elif change == "rename":
                    assume(other != name)
                    os.renames(path, os.path.join(repo.root, other))
                elif change == "delete":
                    os.unlink(path)
                else:
                    os.chmod(path, 0o755)
                repo.git("add", "-A")
            except OSError:
                assume(False)  # a name git or the file system refuses: no patch git writes
            relative = [f"--relative={workspace}"] if workspace else []
            directory = [f"--directory={workspace}"] if workspace else []
            text = repo.git("diff", "--cached", "--binary", "-M", *relative)
            expected = repo.changed()
            self.assertTrue(expected)
            repo.git("reset", "-q", "--hard")
            applied = _run_git(repo.root, "apply", "--index", *directory, "-", data=text)
            if applied.returncode != 0:
                # git cannot read back some headers it writes (`diff --git a/ /  b/ / ` for
                # a new empty file " / "); the reader must refuse them too.
                with self.assertRaises(PatchError, msg=text):
                    touched_paths(text, workspace)
                seen["git refuses its own patch"] += 1
                return
            self.assertEqual(repo.changed(), expected)
            got = {
                (f"{workspace}/{path}" if workspace else path).encode("utf-8", "surrogateescape")
                for path in touched_paths(text, workspace)
            }
            self.assertEqual(got, expected, text)
            seen[change] += 1
            seen["under a workspace"] += bool(workspace)
            seen["binary"] += b"GIT binary patch" in text
            seen["quoted"] += b'"' in text.split(b"\n", 1)[0]
            seen["not utf-8"] += any(_not_utf8(name) for name in expected)
            seen["rename lines"] += b"\nrename from " in text

        check()
        print(f"git-written patches: {dict(seen)}")
        for kind in (
            "add",
            "modify",
            "rename",
            "delete",
            "mode",
            "binary",
            "quoted",
            "rename lines",
            "under a workspace",
        ):
            self.assertGreater(seen[kind], 3, seen)


def _not_utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


class RealGitTest(absltest.TestCase):
    """Diffs written by the git on this machine, compared with what git says it changed."""

    def setUp(self):
        self.repo = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        _git(self.repo, "init", "-q")

    def _write(self, relative: str, data: bytes | str, mode: int = 0o644) -> None:
        path = self.repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        path.write_bytes(data)
        path.chmod(mode)

    def test_every_kind_of_change(self):
        body = "".join(f"line {n}\n" for n in range(40))
        self._write("lib/calc/rules.py", body)
        self._write("lib/calc/calc.py", "x = 1\n")
        self._write("fixtures/cases/cases.txt", body)
        self._write("tools/run.sh", "#!/bin/sh\n")
        self._write("img/logo.bin", b"\x00\x01\x02" * 50)
        self._write("ledger.txtpb", "# ledger\n")
        self._write("docs/caf\u00e9 x.md", "a\n")
        _git(self.repo, "add", "-A")
        _git(self.repo, "commit", "-q", "-m", "base")

        (self.repo / "lib/calc/rules.py").rename(self.repo / "lib/fmt_rules.py")
        self._write("lib/copied_cases.txt", body)  # a copy of a fixture
        (self.repo / "ledger.txtpb").unlink()
        (self.repo / "tools/run.sh").chmod(0o755)
        self._write("img/logo.bin", b"\x00\x09\x02" * 50)
        self._write("docs/caf\u00e9 x.md", "b\n")
        os.symlink("../../outside.txt", self.repo / "fixtures/cases/escape")
        _git(self.repo, "add", "-A")
        text = _git(self.repo, "diff", "--cached", "--binary", "-M", "-C", "--find-copies-harder")
        self.assertIn("rename from lib/calc/rules.py", text)
        self.assertIn("copy from fixtures/cases/cases.txt", text)
        self.assertIn("GIT binary patch", text)

        changed = _git(self.repo, "diff", "--cached", "--no-renames", "--name-only", "-z")
        expected = {name for name in changed.split("\0") if name}
        expected.add("fixtures/cases/cases.txt")  # the copy's source: reported, never missed
        self.assertEqual(set(touched_paths(text)), expected)
        self.assertIn("lib/calc/rules.py", expected)
        self.assertIn("ledger.txtpb", expected)
        self.assertIn("docs/caf\u00e9 x.md", expected)

    def test_patch_applies_to_exactly_what_it_reports(self):
        """`git apply --numstat` of the same text names a subset of the reported paths."""
        self._write("a.txt", "a\n")
        self._write("b/c.txt", "c\n")
        _git(self.repo, "add", "-A")
        _git(self.repo, "commit", "-q", "-m", "base")
        self._write("a.txt", "A\n")
        (self.repo / "b/c.txt").rename(self.repo / "d.txt")
        _git(self.repo, "add", "-A")
        text = _git(self.repo, "diff", "--cached", "--binary", "-M")
        patch_file = self.repo.parent / f"{self.repo.name}.patch"
        patch_file.write_text(text)
        _git(self.repo, "reset", "-q", "--hard")
        numstat = _git(self.repo, "apply", "--numstat", "-z", str(patch_file))
        applied = {field for field in numstat.split("\0") if field and "\t" not in field}
        applied |= {field.split("\t")[-1] for field in numstat.split("\0") if "\t" in field}
        applied.discard("")
        self.assertTrue(applied <= set(touched_paths(text)), (applied, touched_paths(text)))
        self.assertEqual(set(touched_paths(text)), {"a.txt", "b/c.txt", "d.txt"})


class ScaleTest(absltest.TestCase):
    def test_fifty_thousand_files_read_in_order(self):
        sections = []
        for index in range(50_000):
            name = f"pkg{index % 97}/dir{index % 13}/file_{index:05d}.txt"
            sections.append(
                f"diff --git a/{name} b/{name}\nnew file mode 100644\nindex 0000000..1111111\n"
                f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+{index}\n"
            )
        sections.insert(
            31_337,
            "diff --git a/ledger.txtpb b/ledger.txtpb\n--- a/ledger.txtpb\n+++ b/ledger.txtpb\n"
            "@@ -1 +1 @@\n-a\n+b\n",
        )
        # How fast is bench's business; here, that a diff this large reads whole.
        paths = touched_paths("".join(sections))
        self.assertLen(paths, 50_001)
        self.assertEqual(paths[31_337], "ledger.txtpb")
        self.assertEqual(paths[0], "pkg0/dir0/file_00000.txt")


if __name__ == "__main__":
    absltest.main()
