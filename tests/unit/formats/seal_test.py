"""seal.py must agree byte-for-byte with the coreutils pipeline it documents."""

import io
import os
import signal
import subprocess
import tempfile
from contextlib import ExitStack, redirect_stdout
from pathlib import Path
from unittest import mock

from absl.testing import absltest

from agent_gate.drive import sealcheck
from agent_gate.drive.exit_codes import CliError
from agent_gate.formats import forkpool, seal
from proto import agent_gate_pb2

PIPELINE = (
    "find {tree} -type f ! -name '*.seal' -print0 | LC_ALL=C sort -z "
    "| xargs -0 sha256sum | sha256sum"
)


def pipeline_line(repo: Path, tree: str) -> str:
    """The line the real pipeline prints, run from the repo root."""
    result = subprocess.run(
        ["bash", "-c", PIPELINE.format(tree=tree)],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


class SealTreeTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.repo = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))
        fx = self.repo / "fixtures" / "responses"
        write(fx / "a.json", b'{"id": 1}\n')
        write(fx / "with space.json", b"spaced\n")
        write(fx / "nested" / "deep" / "b.txt", b"deep")
        write(fx / "nested" / "empty.bin", b"")
        write(fx / "ünïcødé" / "名前.txt", "non-ascii ✓".encode())
        write(fx / "fixtures.seal", b"0" * 64 + b"  -\n")  # skipped by find
        write(fx / ".seal", b"also skipped")
        write(fx / "x.seal.bak", b"not a seal name")
        write(fx / ".hidden", b"dotfiles count")
        write(fx / "a b", b"space sorts before slash")
        write(fx / "a" / "b", b"under a dir named a")
        write(fx / "big.bin", os.urandom(5 * 1024 * 1024 + 17))
        os.symlink("a.json", fx / "link_to_file")
        os.symlink("nested", fx / "link_to_dir")
        # A name that is not UTF-8: find and sha256sum pass the bytes through.
        with open(os.fsencode(fx) + b"/raw\xff.bin", "wb") as handle:
            handle.write(b"raw")
        (self.repo / "fixtures" / "empty").mkdir()

    def assert_matches_pipeline(self, tree: str, workers=None):
        expected = pipeline_line(self.repo, tree)
        actual = seal.seal_line(seal.seal_tree(self.repo, tree, workers=workers))
        self.assertEqual(expected, actual, f"tree {tree!r}")

    def test_matches_pipeline(self):
        self.assert_matches_pipeline("fixtures/responses")

    def test_matches_pipeline_single_worker(self):
        self.assert_matches_pipeline("fixtures/responses", workers=1)

    def test_parent_dir_and_dot_spellings(self):
        for tree in ("fixtures", "./fixtures/responses", "fixtures/responses/nested"):
            self.assert_matches_pipeline(tree)

    def test_trailing_slashes_match_find(self):
        for tree in ("fixtures/responses/", "fixtures/responses//"):
            self.assert_matches_pipeline(tree)
        # find prints "d/x" for "d/": the same digest as without the slash.
        self.assertEqual(
            seal.seal_tree(self.repo, "fixtures/responses/"),
            seal.seal_tree(self.repo, "fixtures/responses"),
        )
        self.assertNotEqual(
            seal.seal_tree(self.repo, "fixtures/responses//"),
            seal.seal_tree(self.repo, "fixtures/responses"),
        )

    def test_symlinked_start_like_find(self):
        os.symlink("fixtures/responses", self.repo / "linked")
        self.assert_matches_pipeline("linked")  # not followed: empty
        self.assert_matches_pipeline("linked/")  # followed by path resolution
        self.assertNotEqual(
            seal.seal_tree(self.repo, "linked"), seal.seal_tree(self.repo, "linked/")
        )

    def test_single_file_start(self):
        self.assert_matches_pipeline("fixtures/responses/a.json")
        self.assert_matches_pipeline("fixtures/responses/fixtures.seal")

    def test_empty_tree(self):
        self.assert_matches_pipeline("fixtures/empty")
        self.assertEqual(
            "abcfa6a9d4df344d1781bc2560b5e4cdcae08b39ed303063535e7e1e926a304a",
            seal.seal_tree(self.repo, "fixtures/empty"),
        )

    def test_content_change_changes_seal(self):
        before = seal.seal_tree(self.repo, "fixtures/responses")
        (self.repo / "fixtures/responses/nested/empty.bin").write_bytes(b"x")
        self.assertNotEqual(before, seal.seal_tree(self.repo, "fixtures/responses"))

    def test_seal_file_change_does_not_change_seal(self):
        before = seal.seal_tree(self.repo, "fixtures/responses")
        (self.repo / "fixtures/responses/fixtures.seal").write_text("changed\n")
        self.assertEqual(before, seal.seal_tree(self.repo, "fixtures/responses"))

    def test_seal_files_matches_pipeline(self):
        base = self.repo / "fixtures" / "responses"
        rel = []
        for dirpath, dirnames, filenames in os.walk(os.fsencode(base)):
            for name in filenames:
                full = os.path.join(dirpath, name)
                if not os.path.islink(full):
                    rel.append(os.fsdecode(os.path.relpath(full, os.fsencode(self.repo))))
            dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        self.assertIn("fixtures/responses/fixtures.seal", rel)  # skipped by seal_files
        expected = pipeline_line(self.repo, "fixtures/responses")
        self.assertEqual(expected, seal.seal_line(seal.seal_files(self.repo, rel)))
        self.assertEqual(expected, seal.seal_line(seal.seal_files(self.repo, rel, workers=1)))
        self.assertEqual(
            seal.seal_tree(self.repo, "fixtures/empty"), seal.seal_files(self.repo, [])
        )

    def test_seal_files_rejects_bad_paths(self):
        with self.assertRaisesRegex(seal.SealError, "missing.txt"):
            seal.seal_files(self.repo, ["fixtures/responses/missing.txt"])
        with self.assertRaisesRegex(seal.SealError, "not a regular file"):
            seal.seal_files(self.repo, ["fixtures/responses/nested"])
        with self.assertRaisesRegex(seal.SealError, "repo-relative"):
            seal.seal_files(self.repo, ["/etc/hostname"])

    def test_missing_tree_is_an_error(self):
        with self.assertRaisesRegex(seal.SealError, "fixtures/nope"):
            seal.seal_tree(self.repo, "fixtures/nope")

    def test_escaped_names_are_rejected(self):
        for name in ("new\nline.txt", "back\\slash.txt", "carriage\rreturn.txt"):
            with self.subTest(name=name):
                repo = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))
                write(repo / "fx" / "ok.txt", b"ok")
                write(repo / "fx" / name, b"bad")
                with self.assertRaises(seal.SealError) as ctx:
                    seal.seal_tree(repo, "fx")
                self.assertIn(repr("fx/" + name), str(ctx.exception))
                self.assertIn("rename", str(ctx.exception))
                with self.assertRaisesRegex(seal.SealError, "rename"):
                    seal.seal_files(repo, ["fx/" + name])

    def test_cli_prints_seal_line(self):
        out = io.StringIO()
        with redirect_stdout(out):
            code = seal.main(["fixtures/responses", "--repo-root", str(self.repo)])
        self.assertEqual(0, code)
        self.assertEqual(pipeline_line(self.repo, "fixtures/responses"), out.getvalue())

    def test_cli_fails_on_missing_tree(self):
        with redirect_stdout(io.StringIO()):
            code = seal.main(["does/not/exist", "--repo-root", str(self.repo)])
        self.assertEqual(2, code)


class BazelNamesTest(absltest.TestCase):
    """Names the pipeline hashes but no Bazel action can seal: refused when asked."""

    def test_names_bazel_refuses_are_refused_only_when_asked(self):
        for name in (b"colon:x", b"tab\tx", b"del\x7fx", b"raw\xff.bin"):
            with self.subTest(name=name):
                repo = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))
                write(repo / "fx" / "ok.txt", b"ok")
                with open(os.fsencode(repo) + b"/fx/" + name, "wb") as handle:
                    handle.write(b"bad")
                # The pipeline hashes the name; so does the seal by default.
                self.assertEqual(
                    pipeline_line(repo, "fx"), seal.seal_line(seal.seal_tree(repo, "fx"))
                )
                with self.assertRaises(seal.SealError) as ctx:
                    seal.seal_tree(repo, "fx", bazel_names=True)
                message = str(ctx.exception)
                self.assertIn(repr(os.fsdecode(b"fx/" + name)), message)
                self.assertIn("no Bazel action can seal this tree; rename the file", message)
                self.assertIn("UTF-8" if name.endswith(b".bin") else "refuses in a label", message)
                checked = [
                    agent_gate_pb2.FixtureTree(root="fx", seal_file="fx.seal", label="//:fx")
                ]
                write(repo / "fx.seal", pipeline_line(repo, "fx").encode())
                with self.assertRaisesRegex(CliError, r"fixture tree fx \(//:fx\): .*rename"):
                    sealcheck.check(repo, checked)

    def test_names_both_bazel_lanes_take_pass_the_bazel_check(self):
        repo = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))
        for name in ("ünïcødé/名前.txt", "-lead", "a b $#@~'\"", "emoji 😀"):
            write(repo / "fx" / name, name.encode())
        self.assertEqual(
            pipeline_line(repo, "fx"), seal.seal_line(seal.seal_tree(repo, "fx", bazel_names=True))
        )

    def test_workers_refuse_them_too(self):
        repo = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))
        for i in range(40):
            write(repo / "t" / f"d{i:02d}" / "f", b"x")
        with open(os.fsencode(repo) + b"/t/d07/raw\xff.bin", "wb") as handle:
            handle.write(b"not utf-8")
        with ExitStack() as stack:  # even this small tree goes to worker processes
            stack.enter_context(mock.patch.object(seal, "_SERIAL_MAX_FILES", 0))
            stack.enter_context(mock.patch.object(seal, "_SERIAL_MAX_BYTES", -1))
            stack.enter_context(mock.patch.object(seal, "_LIST_BUDGET", 1))
            self.assertEqual(
                pipeline_line(repo, "t"), seal.seal_line(seal.seal_tree(repo, "t", workers=2))
            )
            with self.assertRaises(seal.SealError) as parallel:
                seal.seal_tree(repo, "t", workers=2, bazel_names=True)
        self.assertIn(repr(os.fsdecode(b"t/d07/raw\xff.bin")), str(parallel.exception))


def _kill_this_worker():
    os.kill(os.getpid(), signal.SIGKILL)


def _raise_a_bug():
    raise ValueError("a bug in a worker")


def _hook_kill_first_worker_only(marker: str):
    def hook():
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        _kill_this_worker()

    return hook


def _hook_mark(marker: str):
    def hook():
        Path(marker).touch()

    return hook


class ParallelSealTest(absltest.TestCase):
    """The unit/block merge of the worker processes must equal the pipeline's sort."""

    def setUp(self):
        super().setUp()
        self.repo = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))
        t = self.repo / "t"
        # Names around '/' (0x2f) in byte order: ' ' '!' '-' '.' then '/' then '0' 'A' 'b'.
        for name in ("b", "b-c", "b.txt", "b0", "b 1", "b!", "bA", "c-1", "c.1", "c 1", "c0"):
            write(t / "d" / name, name.encode())
        write(t / "d" / "a" / "x", b"under a")
        write(t / "d" / "b-x" / "y", b"dir b-x beside file b")
        write(t / "d" / "c" / "in c", b"dir c beside files c-1, c.1, c 1, c0")
        write(t / "d" / "c.d" / "z", b"dir c.d")
        write(t / "d" / "c-d" / "z", b"dir c-d")
        write(t / "d" / "c" / "c" / "c", b"c in c in c")
        deep = t / "deep"
        for level in range(1, 25):
            deep = deep / str(level)
            write(deep / f"f{level}", str(level).encode())
        write(deep / "z.seal", b"skipped deep down")
        write(t / "x.seal", b"skipped at the top")
        write(t / "d" / "y.seal", b"skipped in d")
        write(t / "dir.seal" / "kept.txt", b"a directory named *.seal is still walked")
        write(t / "ünïcødé" / "名前.txt", "non-ascii ✓".encode())
        write(t / "zz" / "é", b"high bytes sort after z")
        with open(os.fsencode(t) + b"/d/raw\xff.bin", "wb") as handle:
            handle.write(b"not utf-8")
        (t / "empty").mkdir()
        (t / "d" / "empty").mkdir()
        write(t / "top.txt", b"a file beside the directories")
        write(t / "d" / "head.bin", os.urandom(64 * 1024))  # exactly one first read
        write(t / "d" / "head1.bin", os.urandom(64 * 1024 + 1))
        write(t / "d" / "big.bin", os.urandom(3 * 1024 * 1024 + 17))
        write(t / "d" / "empty.bin", b"")
        for i in range(3000):  # a flat directory: cut into many tasks
            write(t / "flat" / f"f{i:04d}", f"{i}".encode() * (i % 7))
        for i in range(60):  # many sibling directories: many directory units
            write(t / "wide" / f"w{i:02d}" / "f", f"{i}".encode())
            write(t / "wide" / f"w{i:02d}" / "sub" / "g", f"sub {i}".encode())
        os.symlink("d/b", t / "link_to_file")
        os.symlink("d", t / "link_to_dir")
        os.symlink("../t/d/b", t / "d" / "a" / "link_up")

    def parallel(self, budget=1, tasks_per_worker=2):
        """Send even small trees to workers, listing at most `budget` directories."""
        stack = ExitStack()
        stack.enter_context(mock.patch.object(seal, "_SERIAL_MAX_FILES", 0))
        stack.enter_context(mock.patch.object(seal, "_SERIAL_MAX_BYTES", -1))
        stack.enter_context(mock.patch.object(seal, "_LIST_BUDGET", budget))
        stack.enter_context(mock.patch.object(seal, "_TASKS_PER_WORKER", tasks_per_worker))
        return stack

    def assert_no_children_left(self):
        with self.assertRaises(ChildProcessError):
            os.waitpid(-1, os.WNOHANG)

    def test_parallel_matches_pipeline_and_serial(self):
        expected = pipeline_line(self.repo, "t")
        serial = seal.seal_tree(self.repo, "t", workers=1)
        self.assertEqual(expected, seal.seal_line(serial))
        for budget in (1, 2, 3, 5, 30, 1000):
            for tasks_per_worker in (1, 3, 32):
                for workers in (2, 3):
                    with (
                        self.subTest(budget=budget, tasks=tasks_per_worker, workers=workers),
                        self.parallel(budget, tasks_per_worker),
                    ):
                        self.assertEqual(serial, seal.seal_tree(self.repo, "t", workers=workers))
        self.assert_no_children_left()

    def test_parallel_subtrees_and_spellings(self):
        for tree in ("t/", "t//", "./t", "t/d", "t/flat", "t/wide", "t/deep", "t/empty"):
            with self.subTest(tree=tree):
                expected = pipeline_line(self.repo, tree)
                with self.parallel(budget=2):
                    actual = seal.seal_line(seal.seal_tree(self.repo, tree, workers=2))
                self.assertEqual(expected, actual)

    def test_default_thresholds_match_pipeline(self):
        # The unpatched path: listed top-down, then sealed in this process or by workers.
        self.assertEqual(
            pipeline_line(self.repo, "t"), seal.seal_line(seal.seal_tree(self.repo, "t"))
        )

    def test_small_tree_starts_no_process(self):
        marker = str(self.repo / "worker_ran")
        with mock.patch.object(forkpool, "_worker_hook", _hook_mark(marker)):
            seal.seal_tree(self.repo, "t/d", workers=2)
            with self.parallel():
                seal.seal_tree(self.repo, "t", workers=1)  # 1 means no process at all
            self.assertFalse(os.path.exists(marker))
            with self.parallel():
                seal.seal_tree(self.repo, "t", workers=2)
            self.assertTrue(os.path.exists(marker))

    def test_parallel_seal_files_matches_pipeline(self):
        rel = []
        for dirpath, dirnames, filenames in os.walk(os.fsencode(self.repo / "t")):
            for name in filenames:
                full = os.path.join(dirpath, name)
                if not os.path.islink(full):
                    rel.append(os.fsdecode(os.path.relpath(full, os.fsencode(self.repo))))
            dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        expected = pipeline_line(self.repo, "t")
        with self.parallel():
            self.assertEqual(expected, seal.seal_line(seal.seal_files(self.repo, rel, workers=2)))
        self.assertEqual(expected, seal.seal_line(seal.seal_files(self.repo, rel, workers=2)))

    def test_worker_seal_error_keeps_its_message(self):
        write(self.repo / "t" / "wide" / "w07" / "sub" / "new\nline", b"refused")
        with self.assertRaises(seal.SealError) as serial:
            seal.seal_tree(self.repo, "t", workers=1)
        with self.parallel(), self.assertRaises(seal.SealError) as parallel:
            seal.seal_tree(self.repo, "t", workers=2)
        self.assertEqual(str(serial.exception), str(parallel.exception))
        self.assertIn(repr("t/wide/w07/sub/new\nline"), str(parallel.exception))
        self.assert_no_children_left()

    def test_worker_cannot_read(self):
        if os.geteuid() == 0:
            self.skipTest("root reads files whatever their mode")
        locked = self.repo / "t" / "wide" / "w03" / "sub" / "g"
        locked.chmod(0)
        with self.parallel(), self.assertRaisesRegex(seal.SealError, "w03/sub/g: cannot read"):
            seal.seal_tree(self.repo, "t", workers=2)

    def test_killed_workers_become_a_seal_error(self):
        with (
            self.parallel(),
            mock.patch.object(forkpool, "_worker_hook", _kill_this_worker),
            self.assertRaises(seal.SealError) as ctx,
        ):
            seal.seal_tree(self.repo, "t", workers=2)
        message = str(ctx.exception)
        self.assertIn("hashing worker process died (killed by SIGKILL", message)
        self.assertIn("re-run", message)
        self.assert_no_children_left()

    def test_one_killed_worker_becomes_a_seal_error(self):
        # The other worker finishes every remaining task; the lost one is still noticed.
        marker = str(self.repo / "killed_once")
        with (
            self.parallel(),
            mock.patch.object(forkpool, "_worker_hook", _hook_kill_first_worker_only(marker)),
            self.assertRaisesRegex(seal.SealError, r"died \(killed by SIGKILL\)"),
        ):
            seal.seal_tree(self.repo, "t", workers=2)
        self.assert_no_children_left()

    def test_worker_bug_is_not_a_seal(self):
        with (
            self.parallel(),
            mock.patch.object(forkpool, "_worker_hook", _raise_a_bug),
            self.assertRaisesRegex(RuntimeError, "ValueError: a bug in a worker"),
        ):
            seal.seal_tree(self.repo, "t", workers=2)
        self.assert_no_children_left()

    def test_no_descriptor_leaks(self):
        before = len(os.listdir("/proc/self/fd"))
        with self.parallel():
            seal.seal_tree(self.repo, "t", workers=2)
            with (
                mock.patch.object(forkpool, "_worker_hook", _kill_this_worker),
                self.assertRaises(seal.SealError),
            ):
                seal.seal_tree(self.repo, "t", workers=2)
        self.assertEqual(before, len(os.listdir("/proc/self/fd")))


class ReadSealFileTest(absltest.TestCase):
    DIGEST = "ab" * 32

    def write(self, text: str) -> Path:
        path = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir())) / "tree.seal"
        path.write_text(text)
        return path

    def test_accepts_pipeline_line_and_bare_hex(self):
        for text in (
            f"{self.DIGEST}  -\n",
            f"{self.DIGEST}  -",
            f"{self.DIGEST}\n",
            self.DIGEST,
        ):
            with self.subTest(text=text):
                self.assertEqual(self.DIGEST, seal.read_seal_file(self.write(text)))

    def test_round_trips_seal_line(self):
        path = self.write(seal.seal_line(self.DIGEST))
        self.assertEqual(self.DIGEST, seal.read_seal_file(path))

    def test_rejects_garbage(self):
        for text in (
            "",
            "not a seal\n",
            self.DIGEST.upper() + "  -\n",
            self.DIGEST[:-1] + "\n",
            f"{self.DIGEST}  fixtures\n",
            f"{self.DIGEST}  -\n\n",
            f"{self.DIGEST} -\n",
        ):
            with self.subTest(text=text):
                path = self.write(text)
                with self.assertRaises(seal.SealError) as ctx:
                    seal.read_seal_file(path)
                message = str(ctx.exception)
                self.assertIn(str(path), message)
                self.assertIn("<64 lowercase hex>  -", message)
                self.assertIn(".update_seal", message)

    def test_missing_file(self):
        missing = Path(absltest.get_default_test_tmpdir()) / "absent.seal"
        with self.assertRaisesRegex(seal.SealError, "absent.seal"):
            seal.read_seal_file(missing)


if __name__ == "__main__":
    absltest.main()
