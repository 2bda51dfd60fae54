"""Guards on the applied tree, with real git and a real filesystem: git's own reading of
the patch, symlinks as configuration, and Bazel's configuration files however reached."""

import os
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

from absl.testing import absltest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_gate.core import bazel_config
from agent_gate.drive import applied_tree, worktree
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.progress import Progress
from agent_gate.drive.worktree import StagedChange

_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, input=stdin
    ).stdout


class StagedChangesTest(absltest.TestCase):
    """`worktree.staged_changes` after `git apply --index`, on patches git itself wrote."""

    def setUp(self):
        super().setUp()
        self.tmp = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)).resolve()
        env = dict(_ENV, GIT_CEILING_DIRECTORIES=str(self.tmp), XDG_CACHE_HOME=str(self.tmp / "c"))
        self.enter_context(mock.patch.dict(os.environ, env))
        self.top = self.tmp / "repo"
        (self.top / "lib").mkdir(parents=True)
        (self.top / "WORKSPACE").write_text("")
        (self.top / "lib" / "a.py").write_text("a\n")
        (self.top / "lib" / "b.py").write_text("b\n")
        os.symlink("a.py", self.top / "lib" / "link.py")
        _git(self.top, "init", "-q")
        _git(self.top, "add", "-A")
        _git(self.top, "commit", "-q", "-m", "base")
        self.base = _git(self.top, "rev-parse", "HEAD").decode().strip()
        self.repo = worktree.open_repo(self.top)

    def patch_of(self, edit) -> bytes:
        """The `git diff --binary` of `edit` in the checkout, which is then restored."""
        edit(self.top)
        _git(self.top, "add", "-A")
        patch = _git(self.top, "diff", "--cached", "--binary", "HEAD")
        _git(self.top, "reset", "-q", "--hard", "HEAD")
        _git(self.top, "clean", "-q", "-fdx")
        return patch

    def applied(self, patch: bytes) -> list[StagedChange]:
        worktree.prepare(self.repo, self.base, Progress(quiet=True))
        worktree.apply_patch(self.repo, patch, "p", self.base)
        return worktree.staged_changes(self.repo)

    def test_symlinks_on_either_side_and_renames_as_two_paths(self):
        def edit(root: Path) -> None:
            (root / "lib" / "link.py").unlink()
            os.symlink("b.py", root / "lib" / "link.py")  # retargeted
            os.symlink("/usr/bin", root / "tools")  # added
            (root / "lib" / "b.py").rename(root / "lib" / "c.py")
            (root / "lib" / "a.py").chmod(0o755)

        changes = self.applied(self.patch_of(edit))
        by_path = {change.path: change for change in changes}
        self.assertEqual(set(by_path), {"lib/link.py", "tools", "lib/b.py", "lib/c.py", "lib/a.py"})
        self.assertEqual(sorted(applied_tree.symlink_changes(changes)), ["lib/link.py", "tools"])
        self.assertEqual(by_path["lib/a.py"].new_mode, 0o100755)
        self.assertEqual(by_path["lib/b.py"].new_mode, 0)

    def test_a_symlink_replaced_by_a_file_is_a_symlink_change(self):
        def edit(root: Path) -> None:
            (root / "lib" / "link.py").unlink()
            (root / "lib" / "link.py").write_text("now a file\n")

        changes = self.applied(self.patch_of(edit))
        self.assertEqual(applied_tree.symlink_changes(changes), ["lib/link.py"])

    def test_a_gitlink_stays_in_gits_list_whatever_the_patchs_gitmodules_says(self):
        """`.gitmodules` with `ignore = all` hides a gitlink from a plain `git diff --cached`."""
        link = (
            "diff --git a/lib/vendor b/lib/vendor\nnew file mode 160000\n"
            f"index 0000000..{self.base[:7]}\n--- /dev/null\n+++ b/lib/vendor\n"
            f"@@ -0,0 +1 @@\n+Subproject commit {self.base}\n"
        )

        def edit(root: Path) -> None:
            (root / ".gitmodules").write_text(
                '[submodule "v"]\n\tpath = lib/vendor\n\turl = ./elsewhere\n\tignore = all\n'
            )
            (root / "lib" / ".gitattributes").write_text("* ident eol=crlf filter=agent\n")

        patch = link.encode() + self.patch_of(edit)
        changes = self.applied(patch)
        by_path = {change.path: change for change in changes}
        self.assertEqual(set(by_path), {"lib/vendor", ".gitmodules", "lib/.gitattributes"})
        self.assertEqual(applied_tree.gitlink_changes(changes), ["lib/vendor"])
        self.assertEqual(applied_tree.symlink_changes(changes), [])
        applied_tree.cross_check(["lib/vendor", ".gitmodules", "lib/.gitattributes"], changes)

    def test_odd_names_come_back_byte_for_byte(self):
        names = [b"lib/t\tab", b'lib/q"uote\\', b"lib/caf\xc3\xa9", b"lib/\xff\xfe", b"lib/sp ace"]

        def edit(root: Path) -> None:
            for name in names:
                with open(os.path.join(os.fsencode(root), name), "wb") as handle:
                    handle.write(b"x\n")

        changes = self.applied(self.patch_of(edit))
        got = sorted(change.path.encode("utf-8", "surrogateescape") for change in changes)
        self.assertEqual(got, sorted(names))

    def test_a_workspace_in_a_subdirectory_strips_its_prefix(self):
        raw = b":100644 100644 " + b"0" * 40 + b" " + b"1" * 40 + b" M\0ws/lib/a.py\0"
        self.assertEqual(worktree.parse_raw(raw, "ws")[0].path, "lib/a.py")

    def test_unreadable_raw_output_fails_closed(self):
        for raw in (b"garbage\0", b":100644 100644 x y M\0", b":1 2 3 4 M\0"):
            with self.subTest(raw=raw), self.assertRaises(CliError):
                worktree.parse_raw(raw)


class CrossCheckTest(absltest.TestCase):
    def test_agreement_and_each_kind_of_disagreement(self):
        changes = [StagedChange("ledger.txtpb", 0o100644, 0o100644, "M")]
        applied_tree.cross_check(["ledger.txtpb"], changes)
        applied_tree.cross_check(["./ledger.txtpb"], changes)  # the same file
        for read in (
            ["ledger.txtpb 2020-01-01 00:00:00.000000000 +0000"],
            [],
            ["a", "ledger.txtpb"],
        ):
            with self.subTest(read=read), self.assertRaises(CliError) as raised:
                applied_tree.cross_check(read, changes)
            self.assertIn("disagree", str(raised.exception))

    @settings(max_examples=200, deadline=None)
    @given(st.sets(st.text(min_size=1, max_size=8)), st.sets(st.text(min_size=1, max_size=8)))
    def test_passes_only_when_the_sets_are_equal(self, read, applied):
        changes = [StagedChange(path, 0, 0o100644, "A") for path in applied]
        normal = {applied_tree._normal(path) for path in read}
        if normal == set(applied):
            applied_tree.cross_check(sorted(read), changes)
        else:
            with self.assertRaises(CliError):
                applied_tree.cross_check(sorted(read), changes)


class ControlPathsTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.root = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)).resolve()
        (self.root / "lib" / "hook").mkdir(parents=True)
        (self.root / "tools").mkdir()

    def test_by_name_anywhere_in_the_tree(self):
        control = [
            "tools/bazel",
            "sub/tools/bazel",
            ".bazelrc",
            "lib/user.bazelrc",
            "lib/.bazelignore",
            ".bazelversion",
            "x/.bazeliskrc",
            "WORKSPACE",
            "nested/WORKSPACE.bazel",
            "WORKSPACE.bzlmod",
            "m/MODULE.bazel",
            "MODULE.bazel.lock",
            "lib/calc/calc.MODULE.bazel",
            "r/REPO.bazel",
        ]
        plain = [
            "lib/calc.py",
            "tools/bazel.md",
            "docs/bazel",
            "lib/bazelrc.py",
            "BUILD.bazel",
            "docs/MODULE.md",
        ]
        self.assertEqual(applied_tree.control_paths(self.root, control + plain), control)
        for path in control:
            self.assertTrue(bazel_config.is_bazel_config(path), path)
        for path in plain:
            self.assertFalse(bazel_config.is_bazel_config(path), path)

    def test_an_rc_file_the_bazelrc_imports_whatever_its_name(self):
        (self.root / ".bazelrc").write_text(
            "build --color=no\n"
            "import %workspace%/ci/ci.rc\n"
            "try-import '%workspace%/ci/missing.cfg'\n"
            "try-import /etc/outside.rc\n"
            "try-import relative.rc\n"
        )
        (self.root / "ci").mkdir()
        (self.root / "ci" / "ci.rc").write_text("  try-import %workspace%/ci/../lib/more.txt\n")
        (self.root / "lib" / "more.txt").write_text("import %workspace%/ci/ci.rc\n")  # a cycle
        self.assertEqual(
            applied_tree.rc_imports(self.root, rc_files=[]),
            {"ci/ci.rc", "ci/missing.cfg", "lib/more.txt", "relative.rc"},
        )
        touched = ["ci/ci.rc", "ci/missing.cfg", "lib/more.txt", "relative.rc", "ci/other.rc"]
        self.assertEqual(applied_tree.control_paths(self.root, touched), touched[:4])

    def test_imports_spelled_as_only_bazels_own_reader_reads_them(self):
        """Relative names (read from the workspace root, the client's working directory),
        comments, continued lines, quotes that join, escapes and `${NAME}`."""
        (self.root / ".bazelrc").write_text(
            "try-import lib/relative.rc\n"
            "try-import %workspace%/lib/commented.rc  # CI defaults\n"
            "try-import \\\n    %workspace%/lib/continued.rc\n"
            "try-import '%workspace%'/lib/joined.rc\n"
            "try-import %workspace%/lib/sp\\ ace.rc\n"
            "import ${AGENT_GATE_TEST_RC_DIR}/env.rc\n"
            "# try-import %workspace%/lib/comment_only.rc\n"
            "try-import %workspace%/lib/a.rc %workspace%/lib/two_words.rc\n"
        )
        with mock.patch.dict(os.environ, {"AGENT_GATE_TEST_RC_DIR": str(self.root / "lib")}):
            found = applied_tree.rc_imports(self.root, rc_files=[])
        self.assertEqual(
            found,
            {
                "lib/relative.rc",
                "lib/commented.rc",
                "lib/continued.rc",
                "lib/joined.rc",
                "lib/sp ace.rc",
                "lib/env.rc",
                "${AGENT_GATE_TEST_RC_DIR}/env.rc",  # Bazel 4.2.3 reads the name literally
            },
        )

    def test_paths_that_rc_options_name(self):
        """A script, a label's file or package, `%workspace%` and absolute paths; not words."""
        (self.root / "lib" / "calc").mkdir()
        (self.root / "lib" / "calc" / "wrap.sh").write_text("")
        (self.root / ".bazelrc").write_text(
            "build --workspace_status_command=lib/hook/status.sh\n"
            "build --credential_helper=*.example=%workspace%/tools/cred.sh\n"
            "test --run_under=//lib/calc:wrap.sh\n"
            "test:ci --run_under //lib/fmt:wrapper\n"
            f"build --test_env=DATA={self.root}/data/x --define=lib=1 --config=lib\n"
            "build --host_javabase=@local_jdk//:jdk --test_output=errors\n"
            "build --test_env=PATH=/usr/bin:/bin\n"
        )
        found = applied_tree.rc_named_paths(self.root, rc_files=[])
        self.assertEqual(
            found,
            {"lib/hook/status.sh", "tools/cred.sh", "lib/calc/wrap.sh", "lib/fmt", "data/x"},
        )
        touched = ["lib/hook/status.sh", "lib/fmt/w.py", "lib/calc/calc.py", "lib/x.py"]
        self.assertEqual(applied_tree.control_paths(self.root, touched), touched[:2])

    def test_imports_of_the_users_and_the_systems_rc_files(self):
        """~/.bazelrc is trusted, but its `%workspace%/...` import reaches the patched tree,
        also through a file outside the workspace and through a symlink of the base."""
        home = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)).resolve()
        (home / ".bazelrc").write_text(f"import {home}/more.rc\ntry-import %workspace%/a.rc\n")
        (home / "more.rc").write_text("try-import %workspace%/conf/b.rc\n")
        os.symlink("lib/hook", self.root / "conf")
        found = applied_tree.rc_imports(self.root, rc_files=[home / ".bazelrc"])
        self.assertEqual(found, {"a.rc", "conf/b.rc", "lib/hook/b.rc"})
        with mock.patch.dict(os.environ, {"HOME": str(home)}):
            self.assertIn(home / ".bazelrc", applied_tree.default_rc_files())
            self.assertEqual(
                applied_tree.control_paths(self.root, ["lib/hook/b.rc", "lib/hook/c.rc"]),
                ["lib/hook/b.rc"],
            )

    def test_below_an_untracked_symlink_before_the_patch_applies(self):
        """git apply writes through an untracked symlink (bazel-out): such paths are found."""
        outside = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)).resolve()
        os.symlink(outside, self.root / "bazel-out")
        os.symlink("lib", self.root / "alias")
        touched = ["bazel-out/x", "bazel-out/k8/y.pth", "alias/hook/z", "lib/hook/z", "lib/bazel-x"]
        self.assertEqual(
            applied_tree.beyond_symlinks(self.root, touched),
            ["bazel-out/x", "bazel-out/k8/y.pth", "alias/hook/z"],
        )

    def test_bazels_link_names_before_bazel_made_them(self):
        """A fresh worktree has no bazel-testlogs yet: a patch planting one is found."""
        touched = [
            "bazel-testlogs/agent_gate/test.outputs/agent_gate_report.json",
            "bazel-bin",
            "lib/bazel-bin/x",
        ]
        self.assertEqual(applied_tree.beyond_symlinks(self.root, touched), touched[:2])

    def test_through_a_symlink_of_the_tree(self):
        os.symlink("../../tools", self.root / "lib" / "hook" / "cfg")
        os.symlink("../.bazelrc", self.root / "lib" / "rc.txt")
        found = applied_tree.control_paths(
            self.root, ["lib/hook/cfg/bazel", "lib/rc.txt", "lib/hook/ok.py"]
        )
        self.assertEqual(found, ["lib/hook/cfg/bazel", "lib/rc.txt"])

    def test_outside_the_workspace_or_in_a_loop_never_hangs(self):
        """A path through a link out of the tree counts; a loop ends resolution, no hang."""
        os.symlink("/usr/bin", self.root / "lib" / "out")
        os.symlink("loop_b", self.root / "lib" / "loop_a")
        os.symlink("loop_a", self.root / "lib" / "loop_b")
        found = applied_tree.control_paths(
            self.root, ["lib/out/bazel", "lib/loop_a/x", "lib/loop_a", "lib/fine.py"]
        )
        self.assertEqual(found, ["lib/out/bazel"])
        os.symlink(".", self.root / "lib" / "self")
        self.assertEqual(
            applied_tree.control_paths(self.root, ["lib/self/self/.bazelrc"]),
            ["lib/self/self/.bazelrc"],
        )


class RepositoryInputsTest(absltest.TestCase):
    """What repository rules read, from the marker files of both Bazel versions."""

    def test_marker_entries_of_the_main_repository_only(self):
        top = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)).resolve()
        workspace, external = top / "ws", top / "ob" / "external"
        workspace.mkdir()
        external.mkdir(parents=True)
        (external / "@stamp.marker").write_text(
            "abc123\n"
            "FILE://lib/calc:stamp.sh 0f0f\n"  # Bazel 4.2.3: a label
            "FILE://:requirements.txt 0f0f\n"
            "FILE:@bazel_tools//tools/cpp:BUILD.tpl 0f0f\n"
            f"FILE:{workspace}/abs/read.txt 0f0f\n"
            "FILE:/etc/hostname 0f0f\n"
            "ENV:HOME /root\n"
        )
        (external / "@@pip~.marker").write_text(
            "FILE:@@//third_party/requirements_lock.txt 0f0f\n"  # Bazel 7: a path
            "DIRENTS:@@//vendor/wheels 0f0f\n"
            "FILE:@@rules_python~//python/runfiles/__init__.py 0f0f\n"
        )
        (external / "not_a_marker.txt").write_text("FILE://x:y 0\n")
        found = applied_tree.repository_inputs(top / "ob", workspace)
        self.assertEqual(
            found,
            {
                "lib/calc/stamp.sh",
                "requirements.txt",
                "abs/read.txt",
                "third_party/requirements_lock.txt",
                "vendor/wheels",
            },
        )
        touched = ["lib/calc/stamp.sh", "lib/calc/calc.py", "vendor/wheels/x.whl", "vendor/w.txt"]
        self.assertEqual(
            applied_tree.read_by_repository_rules(touched, found),
            ["lib/calc/stamp.sh", "vendor/wheels/x.whl"],
        )
        self.assertEqual(applied_tree.read_by_repository_rules(touched, set()), [])


if __name__ == "__main__":
    absltest.main()
