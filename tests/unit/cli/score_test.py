"""The pure parts of `agent-gate score`: patch intake, override, report paths, the
report of a base whose fixtures drifted, and the exit codes."""

import os
import subprocess
import tempfile
from pathlib import Path

from absl.testing import absltest

from agent_gate.cli import catalog, score
from agent_gate.core import quorum
from agent_gate.drive import exit_codes
from agent_gate.drive.exit_codes import CliError
from proto import agent_gate_pb2

PATCH = b"""diff --git a/store/counters/counter.py b/store/counters/counter.py
index f605fe0..f61433b 100644
--- a/store/counters/counter.py
+++ b/store/counters/counter.py
@@ -1 +1 @@
-a
+b
diff --git a/docs/replay.md b/docs/event-log.md
similarity index 97%
rename from docs/replay.md
rename to docs/event-log.md
"""

CATALOG = catalog.Catalog(
    gate_label="//:agent_gate",
    gate_package="",
    properties=(
        quorum.PropertySpec(
            id="counter.monotonic_under_replay",
            strength="strong",
            locality=("store/counters",),
            fixture_roots=("fixtures/replays",),
        ),
        quorum.PropertySpec(
            id="resp.no_secret_fields",
            strength="strong",
            locality=("api/handlers",),
            fixture_roots=("fixtures/responses",),
        ),
    ),
    fixtures=(
        agent_gate_pb2.FixtureTree(
            root="fixtures/replays", seal_file="fixtures/replays/replays.seal"
        ),
        agent_gate_pb2.FixtureTree(
            root="fixtures/responses", seal_file="fixtures/responses/responses.seal"
        ),
    ),
    ledger_path="ledger.txtpb",
    debt_cap=1,
    rule_set_paths=("WORKSPACE",),
    admission_mutants={},
)
DRIFTED = (
    quorum.FixtureSeal(
        agent_gate_pb2.FixtureTree(
            root="fixtures/replays", seal_file="fixtures/replays/replays.seal"
        ),
        "a" * 64,
        "b" * 64,
    ),
    quorum.FixtureSeal(
        agent_gate_pb2.FixtureTree(
            root="fixtures/responses", seal_file="fixtures/responses/r.seal"
        ),
        "c" * 64,
        "c" * 64,
    ),
)


def _open(property_id: str, commit: str = "1" * 40) -> quorum.LedgerRow:
    return quorum.LedgerRow(property_id, "open", commit, 30, "someone")


class ReadCandidateTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.dir = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))

    def _file(self, data: bytes) -> Path:
        path = self.dir / "candidate.patch"
        path.write_bytes(data)
        return path

    def test_touched_paths_count_both_sides_of_a_rename(self):
        data, touched = score.read_candidate(self._file(PATCH))
        self.assertEqual(data, PATCH)
        self.assertEqual(
            touched, ["store/counters/counter.py", "docs/replay.md", "docs/event-log.md"]
        )

    def test_bad_patches_say_what_to_send(self):
        cases = {
            "empty": b"",
            "binary": b"\x89PNG\r\n\x1a\n\x00\x00",
            "garbage": b"this is not a diff\n",
            "outside": b"--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
        }
        for name, data in cases.items():
            with self.subTest(name), self.assertRaises(CliError) as raised:
                score.read_candidate(self._file(data))
            self.assertEqual(raised.exception.code, 2)

    def test_refusals_say_what_to_do_never_resend_the_same(self):
        """The advice is never "send git diff" for what git diff may have written."""
        cases = {
            b"": "nothing to score",
            b"this is not a diff\n": "no file header.*git diff --binary",
            b"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n": "refuses this too.*damaged",
            b"diff --git a/ /  b/ / \nnew file mode 100644\nindex 0000000..e69de29\n": (
                "rename that file"
            ),
        }
        for data, advice in cases.items():
            with self.subTest(data), self.assertRaises(CliError) as raised:
                score.read_candidate(self._file(data))
            self.assertRegex(str(raised.exception), advice)
            self.assertNotIn("Send the output", str(raised.exception))

    def test_git_diff_binary_of_any_encoding_is_read(self):
        """Files that are not UTF-8 but hold no NUL get text hunks; they are read."""
        repo = self.dir / "repo"
        repo.mkdir()
        env = {
            **os.environ,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.invalid",
        }

        def git(*arguments: str | bytes) -> bytes:
            return subprocess.run(
                ["git", *arguments], cwd=repo, env=env, check=True, capture_output=True
            ).stdout

        git("init", "-q")
        (repo / "corpus").mkdir()
        (repo / "corpus" / "latin1.txt").write_bytes(b"caf\xe9\r\n")
        os.makedirs(os.path.join(bytes(repo), b"corpus"), exist_ok=True)
        with open(os.path.join(bytes(repo), b"corpus", b"bad-\xff.txt"), "wb") as out:
            out.write(b"\xc3\x28 no final newline")
        git("add", "-A")
        git("commit", "-q", "-m", "base")
        (repo / "corpus" / "latin1.txt").write_bytes(b"na\xefve\r\n\xfe\xff")
        with open(os.path.join(bytes(repo), b"corpus", b"bad-\xff.txt"), "ab") as out:
            out.write(b"\x80")
        text = git("diff", "--binary")
        self.assertNotIn(b"GIT binary patch", text)  # text hunks, as the issue saw
        data, touched = score.read_candidate(self._file(text))
        self.assertEqual(data, text)
        self.assertEqual(
            [path.encode("utf-8", "surrogateescape") for path in touched],
            [b"corpus/bad-\xff.txt", b"corpus/latin1.txt"],
        )

    def test_names_under_a_directory_read_as_git_apply_does_there(self):
        data = b"--- ledger.txtpb\n+++ ledger.txtpb\n@@ -1 +1 @@\n-a\n+b\n"
        self.assertEqual(score.read_candidate(self._file(data))[1], ["ledger.txtpb"])
        with self.assertRaisesRegex(CliError, "unable to find a file name"):
            score.read_candidate(self._file(data), directory="sub")

    def test_missing_file(self):
        with self.assertRaises(CliError) as raised:
            score.read_candidate(self.dir / "nope.patch")
        self.assertIn("does not exist", str(raised.exception))

    def test_files_that_never_end_or_never_start_fail_closed_at_once(self):
        """`/dev/zero` would fill memory and a FIFO nobody writes would hang the command."""
        with self.assertRaises(CliError) as raised:
            score.read_candidate(Path("/dev/zero"))
        self.assertIn("larger than", str(raised.exception))
        fifo = self.dir / "fifo"
        os.mkfifo(fifo)
        with self.assertRaises(CliError) as raised:
            score.read_candidate(fifo)
        self.assertIn("empty patch", str(raised.exception))
        with self.assertRaises(CliError) as raised:
            score.read_candidate(self.dir)
        self.assertIn("cannot read patch file", str(raised.exception))

    def test_a_pipe_with_a_writer_is_read_to_its_end(self):
        """`--patch <(git diff)`: the writer may be slow, and the whole patch still arrives."""
        writer = subprocess.Popen(
            ["sh", "-c", "sleep 0.3; cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert writer.stdin is not None and writer.stdout is not None
        writer.stdin.write(PATCH)
        writer.stdin.close()
        try:
            data, touched = score.read_candidate(Path(f"/dev/fd/{writer.stdout.fileno()}"))
        finally:
            writer.stdout.close()
            writer.wait()
        self.assertEqual(data, PATCH)
        self.assertNotEmpty(touched)

    def test_the_size_limit(self):
        path = self._file(PATCH)
        self.assertEqual(score.read_bounded(path, len(PATCH)), PATCH)
        with self.assertRaises(CliError):
            score.read_bounded(path, len(PATCH) - 1)


class OverrideTest(absltest.TestCase):
    def test_both_or_neither(self):
        self.assertIsNone(score.make_override([], None))
        override = score.make_override(["a", " b "], "alice")
        self.assertEqual(override, quorum.Override(by="alice", ignored_ids=("a", "b")))
        for ignore, by in (([], "alice"), (["a"], None), (["a"], "  ")):
            with self.subTest(ignore=ignore, by=by), self.assertRaises(CliError):
                score.make_override(ignore, by)

    def test_only_open_rows_can_be_ignored(self):
        rows = (_open("a"), quorum.LedgerRow("b", "retired"))
        score.check_override(quorum.Override("alice", ("a",)), rows)
        with self.assertRaises(CliError) as raised:
            score.check_override(quorum.Override("alice", ("a", "b")), rows)
        self.assertIn("b, which has no open ledger row", str(raised.exception))


class PreApplyReportTest(absltest.TestCase):
    def _report(self, rows=(), counts=None, override=None):
        return score.pre_apply_report(
            CATALOG,
            seals=DRIFTED,
            rows=rows,
            commit_counts=counts or {},
            touched=["store/counters/counter.py", "docs/x.md"],
            run_id="run-1",
            override=override,
        )

    def test_drift_is_a_fixture_fault_and_nothing_ran(self):
        report = self._report()
        self.assertEqual(report.decision, "fixture_fault")
        self.assertTrue(report.rule.startswith("fixture_fault"))
        self.assertFalse(any(r.startswith("review") for r in report.reasons), report.reasons)
        self.assertEqual(list(report.changed_paths), ["store/counters/counter.py", "docs/x.md"])
        self.assertEqual(report.changed_path_count, 2)
        self.assertEqual(report.run_id, "run-1")
        rows = {row.property_id: row for row in report.rows}
        counter = rows["counter.monotonic_under_replay"]
        self.assertEqual(counter.seal_status, "mismatch")
        self.assertTrue(counter.matched)
        self.assertEqual(counter.matched_by, "store/counters/counter.py")
        self.assertEqual(counter.classification, "not_run")
        self.assertEqual(counter.vote, "not_voting")
        self.assertIn("never applied", counter.note)
        self.assertFalse(rows["resp.no_secret_fields"].matched)
        self.assertEqual(list(report.errors), [])

    def test_stop_queue_keeps_its_precedence(self):
        rows = (_open("counter.monotonic_under_replay"),)  # unknown count: spent, debt 2 > 1
        self.assertEqual(self._report(rows).decision, "stop_queue")
        counted = self._report(rows, counts={"1" * 40: 3})  # debt 1, not above the cap
        self.assertEqual(counted.decision, "fixture_fault")

    def test_override_is_recorded(self):
        rows = (_open("counter.monotonic_under_replay"),)
        report = self._report(
            rows, override=quorum.Override("alice", ("counter.monotonic_under_replay",))
        )
        self.assertEqual(report.decision, "fixture_fault")
        self.assertEqual(report.override.by, "alice")


class GateDefinitionTest(absltest.TestCase):
    def test_starlark_and_the_rule_set_are_refused_before_bazel_runs(self):
        cat = catalog.Catalog(**{**CATALOG.__dict__, "rule_set_paths": ("third_party/agent_gate",)})
        touched = [
            "api/serializers/user.py",
            "deps.bzl",
            "build/defs/macros.bzl",
            "third_party/agent_gate/rules/defs.bzl",
            "third_party/agent_gate/tools/x.py",
            "third_party/agent_gate_v2/x.py",
            "notes.bzl.txt",
            "lib/calc/sums.scl",
            "notes.scl.md",
        ]
        self.assertEqual(
            score.gate_definition_paths(cat, touched),
            [
                "deps.bzl",
                "build/defs/macros.bzl",
                "third_party/agent_gate/rules/defs.bzl",
                "third_party/agent_gate/tools/x.py",
                "lib/calc/sums.scl",
            ],
        )


class PathsAndCodesTest(absltest.TestCase):
    def test_report_paths(self):
        paths = score.report_paths(Path("/tmp/out/r.json"), Path("/state"), "run")
        self.assertEqual(paths, tuple(Path("/tmp/out/r" + s) for s in (".json", ".md", ".xml")))
        _, md, xml = score.report_paths(Path("/tmp/report"), Path("/state"), "run")
        self.assertEqual((md, xml), (Path("/tmp/report.md"), Path("/tmp/report.xml")))
        paths = score.report_paths(None, Path("/state"), "run-7")
        self.assertEqual(paths, tuple(Path("/state/run-7" + s) for s in (".json", ".md", ".xml")))

    def test_report_paths_in_an_existing_directory(self):
        folder = Path(self.create_tempdir().full_path)
        paths = score.report_paths(folder, Path("/state"), "run-8")
        self.assertEqual(paths, tuple(folder / f"run-8{s}" for s in (".json", ".md", ".xml")))
        # A name that is not a directory yet stays a file name.
        paths = score.report_paths(folder / "new", Path("/state"), "run-8")
        self.assertEqual(paths[0], folder / "new")

    def test_exit_codes_are_the_contract(self):
        self.assertEqual(
            {decision: exit_codes.exit_code(decision) for decision in quorum.PRECEDENCE},
            {
                "stop_queue": 14,
                "fixture_fault": 13,
                "review": 12,
                "reject": 10,
                "hold": 11,
                "promote": 0,
            },
        )
        self.assertEqual(exit_codes.exit_code("maybe"), 2)


if __name__ == "__main__":
    absltest.main()
