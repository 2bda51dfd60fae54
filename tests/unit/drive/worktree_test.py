"""The scoring worktree, with real git: isolated from the user's checkout, reset and
cleaned on reuse, Bazel's symlinks kept, patches checked before they are applied."""

import os
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

from absl.testing import absltest

from agent_gate.drive import worktree
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.progress import Progress
from agent_gate.formats.patch import touched_paths

_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}

PATCH = b"""diff --git a/src/a.txt b/src/a.txt
--- a/src/a.txt
+++ b/src/a.txt
@@ -1 +1 @@
-one
+two
"""


def _run(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


class WorktreeTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.tmp = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)).resolve()
        self.cache = self.tmp / "cache"
        env = dict(_ENV, GIT_CEILING_DIRECTORIES=str(self.tmp), XDG_CACHE_HOME=str(self.cache))
        self.enter_context(mock.patch.dict(os.environ, env))
        self.top = self.tmp / "repo"
        (self.top / "src").mkdir(parents=True)
        (self.top / "WORKSPACE").write_text("")
        (self.top / "src" / "a.txt").write_text("one\n")
        _run(self.top, "init", "-q")
        _run(self.top, "add", "-A")
        _run(self.top, "commit", "-q", "-m", "base")
        self.base = _run(self.top, "rev-parse", "HEAD")
        self.progress = Progress(quiet=True)

    def test_not_a_git_repository(self):
        plain = self.tmp / "plain"
        plain.mkdir()
        (plain / "WORKSPACE").write_text("")
        with self.assertRaises(CliError) as raised:
            worktree.open_repo(plain)
        self.assertIn("not inside a git repository", str(raised.exception))

    def test_not_a_workspace(self):
        with self.assertRaises(CliError) as raised:
            worktree.open_repo(self.tmp)
        self.assertIn("not inside a Bazel workspace", str(raised.exception))

    def test_workspace_found_from_a_subdirectory(self):
        repo = worktree.open_repo(self.top / "src")
        self.assertEqual(repo.workspace, self.top)
        self.assertEqual(repo.workspace_rel, "")
        self.assertEqual(repo.scoring_root, repo.state_dir / "scoring")
        self.assertEqual(repo.state_dir.parent, self.cache / "agent_gate")

    def test_the_state_lives_outside_the_checkout_and_its_git_directory(self):
        repo = worktree.open_repo(self.top)
        worktree.prepare(repo, self.base, self.progress)
        state = repo.state_dir.resolve()
        for inside in (self.top, self.top / ".git"):
            self.assertNotIn(inside, [state, *state.parents])
        self.assertFalse((self.top / ".git" / "agent_gate").exists())
        self.assertTrue(state.name.startswith("repo-"))
        # Keyed by the git common dir: a linked worktree shares it, another repository not.
        linked = self.tmp / "linked"
        _run(self.top, "worktree", "add", "-q", "--detach", str(linked), self.base)
        self.assertEqual(worktree.open_repo(linked).state_dir, repo.state_dir)
        other = self.tmp / "other" / "repo"
        other.mkdir(parents=True)
        (other / "WORKSPACE").write_text("")
        _run(other, "init", "-q")
        self.assertNotEqual(worktree.open_repo(other).state_dir, repo.state_dir)

    def test_a_cache_inside_the_repository_is_refused(self):
        for cache in (self.top / "cache", self.top / ".git" / "cache"):
            env = {"XDG_CACHE_HOME": str(cache)}
            with self.subTest(cache=cache), mock.patch.dict(os.environ, env):
                with self.assertRaises(CliError) as raised:
                    worktree.open_repo(self.top)
                self.assertIn("XDG_CACHE_HOME", str(raised.exception))

    def test_a_relative_cache_home_is_ignored(self):
        with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": "relative", "HOME": str(self.tmp)}):
            self.assertEqual(worktree.cache_home(), self.tmp / ".cache")

    def test_prepare_apply_and_reuse_never_touch_the_checkout(self):
        repo = worktree.open_repo(self.top)
        scoring = worktree.prepare(repo, self.base, self.progress)
        self.assertEqual(scoring, repo.scoring_root)
        worktree.apply_patch(repo, PATCH, "p.patch", self.base)
        self.assertEqual((scoring / "src" / "a.txt").read_text(), "two\n")
        self.assertEqual((self.top / "src" / "a.txt").read_text(), "one\n")
        self.assertEqual(_run(self.top, "status", "--porcelain"), "")

        (scoring / "stray.txt").write_text("left by a run")
        (scoring / "bazel-fake").mkdir()  # not a symlink: cleaned like any file
        (scoring / "bazel-bin").symlink_to(self.tmp)  # Bazel's symlink: kept
        again = worktree.prepare(repo, self.base, self.progress)
        self.assertEqual(again, scoring)
        self.assertEqual((scoring / "src" / "a.txt").read_text(), "one\n")
        self.assertFalse((scoring / "stray.txt").exists())
        self.assertFalse((scoring / "bazel-fake").exists())
        self.assertTrue((scoring / "bazel-bin").is_symlink())
        self.assertEqual(_run(self.top, "status", "--porcelain"), "")
        self.assertEqual(_run(self.top, "rev-parse", "HEAD"), self.base)

    def test_a_patch_against_another_base_is_refused(self):
        repo = worktree.open_repo(self.top)
        worktree.prepare(repo, self.base, self.progress)
        other = PATCH.replace(b"-one", b"-uno")
        with self.assertRaises(CliError) as raised:
            worktree.apply_patch(repo, other, "other.patch", self.base)
        self.assertIn("does not apply to base", str(raised.exception))
        self.assertIn("--base", str(raised.exception))
        self.assertEqual((repo.scoring_root / "src" / "a.txt").read_text(), "one\n")

    def test_workspace_in_a_subdirectory(self):
        nested = self.top / "ws"
        (nested / "src").mkdir(parents=True)
        (nested / "WORKSPACE").write_text("")
        (nested / "src" / "a.txt").write_text("one\n")
        _run(self.top, "add", "-A")
        _run(self.top, "commit", "-q", "-m", "nested")
        head = _run(self.top, "rev-parse", "HEAD")
        repo = worktree.open_repo(nested)
        self.assertEqual(repo.workspace_rel, "ws")
        scoring = worktree.prepare(repo, head, self.progress)
        self.assertEqual(scoring, repo.scoring_root / "ws")
        worktree.apply_patch(repo, PATCH, "p.patch", head)
        self.assertEqual((scoring / "src" / "a.txt").read_text(), "two\n")
        self.assertEqual((repo.scoring_root / "src" / "a.txt").read_text(), "one\n")

    def test_git_diff_binary_text_hunks_in_any_bytes_read_and_apply_as_bytes(self):
        # Text hunks git writes for files that are not UTF-8 (no NUL byte), CRLF and
        # no final newline, and a binary hunk: read, then applied, byte for byte.
        before = {
            "src/latin1.txt": "café\r\nna\xefve\r\n".encode("latin-1"),
            "src/invalid.txt": b"\xff\xfe\xc3\x28 not utf-8\n",
            "src/no_newline.txt": b"last line",
            "src/utf16.txt": "utf-16 ✓\n".encode("utf-16"),
        }
        after = {
            "src/latin1.txt": "caf\xe9\r\nna\xefve, changed\r\n".encode("cp1252"),
            "src/invalid.txt": b"\xff\xfe\xc3\x28 still not utf-8\n\x80",
            "src/no_newline.txt": b"last line, still without newline",
            "src/utf16.txt": "utf-16 ✓ changed\n".encode("utf-16"),
            "src/new été.txt": b"\r\n",  # a quoted name in the header
        }
        for name, data in before.items():
            (self.top / name).write_bytes(data)
        _run(self.top, "add", "-A")
        _run(self.top, "commit", "-q", "-m", "encodings")
        head = _run(self.top, "rev-parse", "HEAD")
        for name, data in after.items():
            (self.top / name).write_bytes(data)
        _run(self.top, "add", "-A")
        patch = subprocess.run(
            ["git", "diff", "--cached", "--binary"], cwd=self.top, check=True, capture_output=True
        ).stdout
        _run(self.top, "reset", "-q", "--hard", head)
        self.assertIn(b"\xff\xfe\xc3\x28 still", patch)  # a text hunk of raw bytes
        self.assertIn(b"GIT binary patch", patch)  # utf-16 holds NUL bytes

        self.assertEqual(sorted(touched_paths(patch)), sorted(after))
        repo = worktree.open_repo(self.top)
        scoring = worktree.prepare(repo, head, self.progress)
        worktree.apply_patch(repo, patch, "encodings.patch", head)
        for name, data in after.items():
            self.assertEqual((scoring / name).read_bytes(), data, name)

    def test_revisions_and_commit_counts(self):
        repo = worktree.open_repo(self.top)
        with self.assertRaises(CliError):
            worktree.resolve_rev(repo, "no-such-branch")
        with self.assertRaises(CliError):
            worktree.resolve_rev(repo, "--all")
        for _ in range(3):
            _run(self.top, "commit", "-q", "--allow-empty", "-m", "more")
        head = worktree.resolve_rev(repo, "HEAD")
        self.assertEqual(worktree.commits_since(repo, self.base, head), 3)
        self.assertIsNone(worktree.commits_since(repo, "0" * 40, head))
        self.assertIsNone(worktree.commits_since(repo, "--all", head))


class PruneRunsTest(absltest.TestCase):
    """`<state dir>/runs/` keeps the newest N run folders; nothing outside it is touched."""

    def setUp(self):
        self.root = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        self.runs = self.root / "runs"
        self.runs.mkdir()
        self.outside = self.root / "outside"
        self.outside.mkdir()
        (self.outside / "keep.txt").write_text("not a run\n")

    def _run_folder(self, name: str, age: int, read_only: bool = False) -> Path:
        folder = self.runs / name
        (folder / "outputs").mkdir(parents=True)
        (folder / "outputs" / "bazel.log").write_text(name)
        if read_only:  # as Bazel leaves some trees
            (folder / "outputs").chmod(0o555)
        stamp = 1_000_000 + age
        os.utime(folder, (stamp, stamp))
        return folder

    def test_keeps_the_newest_and_never_follows_a_link(self):
        for age, name in enumerate(["score-a", "score-b", "freeze-c", "score-d", "score-e"]):
            self._run_folder(name, age, read_only=name == "score-b")
        link = self.runs / "link"
        link.symlink_to(self.outside, target_is_directory=True)
        os.utime(link, (1_000_000 - 1, 1_000_000 - 1), follow_symlinks=False)
        removed = worktree.prune_runs(self.runs, 2, Progress(quiet=True))
        self.assertEqual(removed, ["freeze-c", "link", "score-a", "score-b"])
        self.assertEqual(sorted(p.name for p in self.runs.iterdir()), ["score-d", "score-e"])
        self.assertEqual((self.outside / "keep.txt").read_text(), "not a run\n")

    def test_fewer_than_kept_and_no_folder_are_left_alone(self):
        self._run_folder("score-a", 0)
        self.assertEqual(worktree.prune_runs(self.runs, 20, Progress(quiet=True)), [])
        self.assertTrue((self.runs / "score-a").is_dir())
        missing = self.root / "nothing"
        self.assertEqual(worktree.prune_runs(missing, 1, Progress(quiet=True)), [])


if __name__ == "__main__":
    absltest.main()
