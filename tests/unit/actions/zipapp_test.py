"""//tools's archives (rules/private/zipapp.bzl): one input per action, compiled once.

Each archive must hold, for every module, a `.pyc` of exactly that source that an
import from the archive loads, so that no action compiles the tool again in its
sandbox; and it must run the entry point it was built for.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from absl.testing import absltest
from runfiles import runfiles

from agent_gate.actions import zipapp_main

# importlib's pyc header: magic (4), flags (4; bit 0 = hash-based, bit 1 = checked), hash (8).
_HASH_BASED, _CHECKED = 0b01, 0b10

_ARCHIVES = {
    "run_property": "agent_gate.actions.run_property_main",
    "seal_files": "agent_gate.actions.seal_files_main",
    "evaluate_gate": "agent_gate.actions.evaluate_gate_main",
}

# Imports each name in a fresh interpreter with only the archive and the pip
# packages on its path; prints what it compiled and where each module came from.
_PROBE = """\
import importlib, json, sys
compiled = []
sys.addaudithook(lambda event, args: compiled.append(str(args[1])) if event == 'compile' else None)
for name in sys.argv[1:]:
    importlib.import_module(name)
ours = {n: getattr(m, '__file__', None) for n, m in sys.modules.items()
        if n.split('.')[0] in ('agent_gate', 'proto')}
print(json.dumps({'compiled': [c for c in compiled if 'agent_gate' in c or '_pb2' in c],
                  'files': ours}))
"""


def _archive(name: str) -> Path:
    path = runfiles.Create().Rlocation(f"agent_gate/tools/{name}.zip")
    if path is None or not Path(path).is_file():
        raise AssertionError(f"//tools:{name}'s archive is not in runfiles")
    return Path(path)


def _site_path() -> list[str]:
    """This test's import path without the tool's own sources (which sit beside its runfiles)."""
    return [entry for entry in sys.path if not (Path(entry) / "agent_gate").is_dir()]


def _python(*args: str, path: Sequence[object] = ()) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in a fresh interpreter with exactly `path` on PYTHONPATH."""
    return subprocess.run(
        [sys.executable, *args],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def _run(archive: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python ARGS` with the archive first on the path, then this test's pip packages."""
    return _python(*args, path=[archive, *_site_path()])


class BuiltArchivesTest(absltest.TestCase):
    def test_every_module_has_a_checked_pyc_of_its_own_source(self):
        for name in _ARCHIVES:
            with self.subTest(archive=name), zipfile.ZipFile(_archive(name)) as archive:
                files = [n for n in archive.namelist() if not n.endswith("/")]
                sources = [n for n in files if n.endswith(".py")]
                self.assertGreater(len(sources), 20, "the tool's modules are missing")
                self.assertIn("proto/agent_gate_pb2.py", sources)
                self.assertEqual(len(files), 2 * len(sources), "a .pyc without its source")
                for source in sources:
                    header = archive.read(source + "c")[:16]
                    self.assertEqual(header[:4], importlib.util.MAGIC_NUMBER, source)
                    self.assertEqual(
                        int.from_bytes(header[4:8], "little"), _HASH_BASED | _CHECKED, source
                    )
                    self.assertEqual(
                        header[8:16], importlib.util.source_hash(archive.read(source)), source
                    )

    def test_importing_from_an_archive_compiles_nothing_of_the_tool(self):
        for name, main in _ARCHIVES.items():
            with self.subTest(archive=name):
                archive = _archive(name)
                done = _run(archive, "-c", _PROBE, main)
                self.assertEqual(done.returncode, 0, done.stderr)
                seen = json.loads(done.stdout)
                self.assertEqual(seen["compiled"], [], "compiled at import")
                outside = {
                    n: f
                    for n, f in seen["files"].items()
                    if f and not f.startswith(str(archive) + os.sep)
                }
                self.assertEqual(outside, {}, "modules loaded from outside the archive")

    def test_the_evaluator_keeps_protobufs_own_implementation(self):
        """The archive never costs protobuf its native implementation: run as the gate's
        launcher runs it (the archive, then protobuf's directory in runfiles, which keeps
        what an archive cannot hold), protobuf is the implementation the interpreter's
        own environment has, not the pure-Python one it would quietly fall back to."""
        archive = _archive("evaluate_gate")
        # Absent where protobuf is pure Python (the 7.7.1 lane's): all of it is archived.
        sites = sorted(Path(os.environ["TEST_SRCDIR"]).glob("*/protobuf/site"))
        probe = (
            "import google.protobuf\n"
            "from google.protobuf.internal import api_implementation\n"
            "print(api_implementation.Type(), google.protobuf.__file__)\n"
        )

        def implementation(path: list[object], *flags: str) -> list[str]:
            done = _python(*flags, "-c", probe, path=path)
            self.assertEqual(done.returncode, 0, done.stderr)
            return done.stdout.split()

        own, _ = implementation([])
        # -S: nothing of the interpreter's site-packages, where protobuf may be too.
        gate, location = implementation([archive, *sites], "-S")
        self.assertEqual(gate, own, location)

    def test_each_archive_runs_its_entry_point(self):
        for name in _ARCHIVES:
            with self.subTest(archive=name):
                archive = _archive(name)
                done = _run(archive, str(archive), "--help")
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertIn("--", done.stdout)


class PackTest(absltest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        self.modules = {
            "app/__init__.py": b"",
            "app/main.py": b"from ns import value\nprint('value', value.VALUE)\n",
            "ns/value.py": b"VALUE = 1\n",
        }

    def _pack(self, name: str, modules: dict[str, bytes]) -> Path:
        out = self.root / name
        zipapp_main.pack(out, "app.main", modules)
        return out

    def _run(self, archive: Path) -> str:
        done = _python("-I", str(archive))
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout.strip()

    def test_the_same_sources_give_the_same_bytes(self):
        first = self._pack("a.zip", self.modules)
        second = self._pack("b.zip", dict(reversed(list(self.modules.items()))))
        self.assertEqual(first.read_bytes(), second.read_bytes())
        self.assertEqual(self._run(first), "value 1")

    def test_a_directory_without_init_becomes_a_package(self):
        """A regular `ns` elsewhere on the path would otherwise take the name over."""
        with zipfile.ZipFile(self._pack("a.zip", self.modules)) as archive:
            self.assertEqual(archive.read("ns/__init__.py"), b"")
            self.assertIn("ns/__init__.pyc", archive.namelist())

    def test_a_pyc_of_other_bytes_is_never_used(self):
        """zipimport checks each .pyc against its source: the source edited after
        packing is what runs (an unchecked .pyc would run the old code)."""
        packed = self._pack("a.zip", self.modules)
        edited = self.root / "edited.zip"
        with zipfile.ZipFile(packed) as source, zipfile.ZipFile(edited, "w") as target:
            for info in source.infolist():
                data = source.read(info)
                target.writestr(info, b"VALUE = 2\n" if info.filename == "ns/value.py" else data)
        self.assertEqual(self._run(edited), "value 2")

    def test_a_pip_package_keeps_its_namespace_package(self):
        """`google` has no `__init__.py` in protobuf: the archive must not add one (it
        would hide the part of `google` left in runfiles), and must list the directory,
        or zipimport finds no namespace package at all."""
        out = self.root / "a.zip"
        zipapp_main.pack(out, "app.main", self.modules, {"google/protobuf/__init__.py": b"V = 3\n"})
        with zipfile.ZipFile(out) as archive:
            self.assertNotIn("google/__init__.py", archive.namelist())
            self.assertIn("google/", archive.namelist())
        beside = self.root / "beside" / "google" / "other"
        beside.mkdir(parents=True)
        (beside / "__init__.py").write_text("V = 4\n")
        probe = "import google.protobuf as a, google.other as b; print(a.V, b.V)"
        done = _python("-S", "-c", probe, path=[out, self.root / "beside"])
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.split(), ["3", "4"])

    def test_a_package_of_both_this_repository_and_a_pip_package_is_refused(self):
        with self.assertRaisesRegex(ValueError, "share google/"):
            zipapp_main.pack(
                self.root / "a.zip",
                "app.main",
                {**self.modules, "google/x.py": b""},
                {"google/y.py": b""},
            )

    def test_a_module_named_like_the_archive_entry_point_is_refused(self):
        with self.assertRaisesRegex(ValueError, "__main__"):
            self._pack("a.zip", {**self.modules, "__main__.py": b""})
        self.assertEqual(zipapp_main.main(["--out", str(self.root / "x.zip"), "--main", "m"]), 0)
        self.assertEqual(
            zipapp_main.main(
                [
                    "--out",
                    str(self.root / "y.zip"),
                    "--main",
                    "m",
                    "--module",
                    "m.py",
                    "/nonexistent",
                ]
            ),
            1,
        )


if __name__ == "__main__":
    absltest.main()
