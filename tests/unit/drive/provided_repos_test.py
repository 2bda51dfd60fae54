"""provided_repos: a changed agent_gate repository in the output base is found and removed."""

import os
import tempfile
from pathlib import Path

from absl.testing import absltest

from agent_gate.drive import provided_repos


class ProvidedReposTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.base = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        external = self.base / "external"
        python = external / "agent_gate_python"
        python.mkdir(parents=True)
        (python / "BUILD.bazel").write_text('py_runtime(interpreter_path = "/venv/bin/python3")\n')
        (external / "@agent_gate_python.marker").write_text("abc\n")
        shim = external / "rules_python" / "python"
        shim.mkdir(parents=True)
        os.symlink("/checkout/tools/offline/rules_python/python/defs.bzl", shim / "defs.bzl")
        self.state = self.base.parent / f"{self.base.name}.json"
        provided_repos.record(self.base, self.state)

    def test_unchanged_repositories_stay(self):
        self.assertEqual(provided_repos.tampered(self.base, self.state), [])
        self.assertTrue((self.base / "external/agent_gate_python/BUILD.bazel").is_file())

    def test_a_rewritten_file_is_found_and_deleted_with_its_marker(self):
        build = self.base / "external/agent_gate_python/BUILD.bazel"
        build.write_text('py_runtime(interpreter_path = "/tmp/evil/python3")\n')
        self.assertEqual(provided_repos.tampered(self.base, self.state), ["agent_gate_python"])
        self.assertFalse(build.parent.exists())
        self.assertFalse((self.base / "external/@agent_gate_python.marker").exists())
        self.assertTrue((self.base / "external/rules_python").is_dir())

    def test_a_retargeted_symlink_and_an_added_file_are_changes(self):
        link = self.base / "external/rules_python/python/defs.bzl"
        link.unlink()
        os.symlink("/tmp/evil/defs.bzl", link)
        self.assertEqual(provided_repos.tampered(self.base, self.state), ["rules_python"])
        provided_repos.record(self.base, self.state)
        (self.base / "external/agent_gate_python/sitecustomize.py").write_text("x = 1\n")
        self.assertEqual(provided_repos.tampered(self.base, self.state), ["agent_gate_python"])

    def test_nothing_recorded_yet_checks_nothing(self):
        self.state.unlink()
        self.assertEqual(provided_repos.tampered(self.base, self.state), [])


if __name__ == "__main__":
    absltest.main()
