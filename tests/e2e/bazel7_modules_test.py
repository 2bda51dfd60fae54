"""The Bazel 7.7.1 lane resolves a users' kind of MODULE.bazel offline.

tools/bazel7.bazelrc and tools/bazel7_registry stand in for what Debian does
not package (protobuf, rules_python's pip and python extensions, rules_shell
versions). This pins, on a temporary bzlmod workspace whose MODULE.bazel is
written the way agent_gate's is (rules_python 0.31-style `python.toolchain`
and `pip.parse(hub_name = ...)`, protobuf's `py_proto_library`):

* a py_test that imports a pip hub's packages (pyyaml, and bazel-runfiles,
  which Debian lacks) and a generated `_pb2` module, and round-trips a message,
  passes under linux-sandbox, offline;
* the hub has a target per lock-file distribution, normalized the way
  rules_python names them, and nothing else;
* one hub name in two modules is refused, as rules_python refuses it;
* a module neither Debian nor the lane serves fails to resolve, naming the
  module, instead of being downloaded.

Needs root and the sid root (tools/bootstrap_bazel7); without them it fails.
Run: .venv/bin/python3 tests/e2e/bazel7_modules_test.py
"""

import subprocess
from pathlib import Path

from absl.testing import absltest
from bazel7_workspace import BAZEL7, Bazel7Workspace

MODULE = """module(name = "bazel7_modules_probe")

bazel_dep(name = "rules_python", version = "0.31.0")
bazel_dep(name = "protobuf", version = "29.0", repo_name = "com_google_protobuf")

python = use_extension("@rules_python//python/extensions:python.bzl", "python")
python.toolchain(python_version = "3.11")

pip = use_extension("@rules_python//python/extensions:pip.bzl", "pip")
pip.parse(
    hub_name = "probe_pypi",
    python_version = "3.11",
    requirements_lock = "//:requirements.lock",
)
use_repo(pip, "probe_pypi")
"""

LOCK = """# A lock file as pip-compile writes it.
PyYAML==6.0.1 \\
    --hash=sha256:0000000000000000000000000000000000000000000000000000000000000000
bazel-runfiles==0.31.0 \\
    --hash=sha256:0000000000000000000000000000000000000000000000000000000000000000
protobuf==4.21.12 ; python_version >= "3"
zope.interface==6.0
"""

BUILD = """load("@com_google_protobuf//bazel:proto_library.bzl", "proto_library")
load("@com_google_protobuf//bazel:py_proto_library.bzl", "py_proto_library")
load("@rules_python//python:defs.bzl", "py_test")

proto_library(
    name = "probe_proto",
    srcs = ["probe.proto"],
)

py_proto_library(
    name = "probe_py_pb2",
    deps = [":probe_proto"],
)

py_test(
    name = "probe_test",
    srcs = ["probe_test.py"],
    data = ["data.txt"],
    deps = [
        ":probe_py_pb2",
        "@probe_pypi//bazel_runfiles",
        "@probe_pypi//protobuf",
        "@probe_pypi//pyyaml",
    ],
)
"""

PROTO = """syntax = "proto3";

package probe;

message Probe {
  string name = 1;
  repeated int64 counts = 2;
}
"""

TEST = """import yaml
from runfiles import runfiles

import probe_pb2

message = probe_pb2.Probe(name="lane", counts=[1, 2])
again = probe_pb2.Probe.FromString(message.SerializeToString())
assert again == message, again
assert yaml.safe_load("a: [1, 2]") == {"a": [1, 2]}
path = runfiles.Create().Rlocation("_main/data.txt")
with open(path) as f:
    assert f.read() == "data\\n"
print("probe ok")
"""


class Bazel7ModulesTest(absltest.TestCase):
    tmp: Path
    workspace: Path

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.lane = Bazel7Workspace("bazel7_modules_")
        cls.tmp, cls.workspace = cls.lane.tmp, cls.lane.root
        cls.workspace.mkdir()
        files = {
            "MODULE.bazel": MODULE,
            "WORKSPACE.bzlmod": "",
            "requirements.lock": LOCK,
            "BUILD.bazel": BUILD,
            "probe.proto": PROTO,
            "probe_test.py": TEST,
            "data.txt": "data\n",
        }
        for name, text in files.items():
            (cls.workspace / name).write_text(text)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.lane.close()
        super().tearDownClass()

    @classmethod
    def _bazel(cls, *args: str) -> subprocess.CompletedProcess[str]:
        return cls.lane.bazel(*args)

    def test_pip_hub_and_py_proto_library_work_offline(self) -> None:
        result = self._bazel(
            "test", "--spawn_strategy=linux-sandbox", "--test_output=all", "//:probe_test"
        )
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("probe ok", result.stdout)

    def test_hub_has_one_target_per_distribution(self) -> None:
        result = self._bazel("query", "kind(py_library, @probe_pypi//...)")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(
            sorted(result.stdout.split()),
            [
                "@probe_pypi//bazel_runfiles:bazel_runfiles",
                "@probe_pypi//protobuf:protobuf",
                "@probe_pypi//pyyaml:pyyaml",
                "@probe_pypi//zope_interface:zope_interface",
            ],
        )

    def test_hub_name_used_by_two_modules_is_refused(self) -> None:
        # As rules_python does: a dependency's hub may not take the root's name.
        dep = self.tmp / "dep"
        dep.mkdir(exist_ok=True)
        (dep / "MODULE.bazel").write_text(
            'module(name = "dep")\n\n'
            'bazel_dep(name = "rules_python", version = "0.31.0")\n\n'
            'pip = use_extension("@rules_python//python/extensions:pip.bzl", "pip")\n'
            'pip.parse(hub_name = "probe_pypi", requirements_lock = "//:requirements.lock")\n'
            'use_repo(pip, "probe_pypi")\n'
        )
        (dep / "BUILD.bazel").write_text("")
        (dep / "requirements.lock").write_text("pyyaml==6.0.1\n")
        root = self.tmp / "collide"
        root.mkdir(exist_ok=True)
        (root / "MODULE.bazel").write_text(
            MODULE.replace('"bazel7_modules_probe"', '"collide"')
            + f'\nbazel_dep(name = "dep", version = "0")\n'
            f'local_path_override(module_name = "dep", path = "{dep}")\n'
        )
        (root / "requirements.lock").write_text("pyyaml==6.0.1\n")
        (root / "BUILD.bazel").write_text("")
        (root / "WORKSPACE.bzlmod").write_text("")
        output_base = f"--output_base={self.tmp / 'collide_output_base'}"
        result = subprocess.run(
            [str(BAZEL7), output_base, "build", "@probe_pypi//pyyaml"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        subprocess.run([str(BAZEL7), output_base, "shutdown"], cwd=root, check=False)
        self.assertNotEqual(result.returncode, 0, result.stderr)
        self.assertIn('hub_name "probe_pypi" is used by both', result.stderr)

    def test_unknown_module_is_not_downloaded(self) -> None:
        other = self.tmp / "other"
        other.mkdir(exist_ok=True)
        (other / "MODULE.bazel").write_text(
            'module(name = "other")\n\nbazel_dep(name = "rules_go", version = "0.50.1")\n'
        )
        (other / "BUILD.bazel").write_text("")
        result = subprocess.run(
            [str(BAZEL7), f"--output_base={self.tmp / 'other_output_base'}", "build", "//..."],
            cwd=other,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        subprocess.run(
            [str(BAZEL7), f"--output_base={self.tmp / 'other_output_base'}", "shutdown"],
            cwd=other,
            capture_output=True,
            check=False,
        )
        self.assertNotEqual(result.returncode, 0, result.stderr)
        self.assertIn("rules_go", result.stderr)
        self.assertNotIn("bcr.bazel.build", result.stderr)


if __name__ == "__main__":
    absltest.main()
