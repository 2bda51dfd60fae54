"""The registry files in .bcr/ agree with MODULE.bazel (run outside Bazel: `.bcr` is no package).

* the test module of presubmit.yml exists, depends on this module by its name and
  version, reaches it through local_path_override at the repository root, and
  declares the targets the presubmit builds and tests;
* the presubmit covers Bazel 7, 8 and 9;
* metadata.template.json and source.template.json are the registry's shape and
  name this module's repository;
* MODULE.bazel's name, version and compatibility level are spelled once there.

Run: .venv/bin/python3 tests/e2e/bcr_shape_test.py
"""

import json
import re
from pathlib import Path

import yaml
from absl.testing import absltest

ROOT = Path(__file__).resolve().parents[2]
BCR = ROOT / ".bcr"


def _module_attribute(text: str, name: str) -> str:
    block = re.search(r"\bmodule\((.*?)\)", text, re.S)
    assert block is not None, "MODULE.bazel has no module()"
    found = re.search(rf"\b{name}\s*=\s*(\"[^\"]*\"|\d+)", block.group(1))
    assert found is not None, f"module() sets no {name}"
    return found.group(1).strip('"')


class BcrShapeTest(absltest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        module = (ROOT / "MODULE.bazel").read_text()
        self.name = _module_attribute(module, "name")
        self.version = _module_attribute(module, "version")
        self.level = _module_attribute(module, "compatibility_level")
        self.presubmit = yaml.safe_load((BCR / "presubmit.yml").read_text())

    def test_module_identity(self) -> None:
        self.assertEqual(self.name, "agent_gate")
        self.assertRegex(self.version, r"^\d+\.\d+\.\d+$")
        self.assertTrue(self.level.isdigit())

    def test_the_test_module_depends_on_this_module(self) -> None:
        test_module = self.presubmit["bcr_test_module"]
        folder = ROOT / test_module["module_path"]
        module = (folder / "MODULE.bazel").read_text()
        self.assertIn(f'bazel_dep(name = "{self.name}", version = "{self.version}")', module)
        override = re.search(r"local_path_override\((.*?)\)", module, re.S)
        self.assertIsNotNone(override)
        path = re.search(r'path = "([^"]+)"', override.group(1)).group(1)
        self.assertEqual((folder / path).resolve(), ROOT)
        build = (folder / "BUILD.bazel").read_text()
        modes = re.findall(r'"(\w+)"', re.search(r"MODES = \[(.*?)\]", build, re.S).group(1))
        # Declared by name, or by the comprehensions over MODES.
        declared = {"agent_gate"} if 'name = "agent_gate"' in build else set()
        declared |= {f"{mode}_test" for mode in modes} | {f"fault.{mode}" for mode in modes}
        for task in test_module["tasks"].values():
            for target in task.get("build_targets", []) + task.get("test_targets", []):
                self.assertIn(target.removeprefix("//:"), declared, f"{folder}/BUILD.bazel")

    def test_every_supported_bazel_is_in_the_matrix(self) -> None:
        matrix = self.presubmit["bcr_test_module"]["matrix"]
        self.assertEqual(matrix["bazel"], ["7.x", "8.x", "9.x"])

    def test_templates(self) -> None:
        metadata = json.loads((BCR / "metadata.template.json").read_text())
        keys = ["homepage", "maintainers", "repository", "versions", "yanked_versions"]
        self.assertEqual(sorted(metadata), keys)
        self.assertTrue(all(repo.endswith(f"/{self.name}") for repo in metadata["repository"]))
        source = json.loads((BCR / "source.template.json").read_text())
        self.assertEqual(sorted(source), ["integrity", "strip_prefix", "url"])
        self.assertIn("{TAG}", source["url"])


if __name__ == "__main__":
    absltest.main()
