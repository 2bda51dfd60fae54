"""A consumer that keeps its own Python toolchain runs the gate, on both lanes.

tests/e2e/workspaces/own_python registers its own toolchain: an interpreter in a
virtual environment with no packages at all. On Bazel 4.2.3 it calls
`agent_gate_dependencies(register_python_toolchain = False)`; on Bazel 7.7.1
(bzlmod) it registers its toolchain in MODULE.bazel and, because this lane's rc
file forces its own with --extra_toolchains, names it again on the command line.

On each lane:
* the consumer's py_test runs on the consumer's interpreter and can import none
  of agent_gate's packages (yaml, protobuf, absl, hypothesis, runfiles);
* the gate itself, whose tools need those packages, runs on that same
  interpreter with the packages from agent_gate's own hub, seals a fixture tree
  with a non-ASCII name and promotes a passing property.

Run: .venv/bin/python3 tests/e2e/own_python_test.py (needs tools/bootstrap_bazel7's sid root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools"), str(Path(__file__).resolve().parent)]

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

from absl.testing import absltest  # noqa: E402
from bazel7_workspace import BAZEL7, Bazel7Workspace  # noqa: E402
from google.protobuf import text_format  # noqa: E402

from agent_gate.drive import bazel_client, gate_target  # noqa: E402
from proto import agent_gate_pb2  # noqa: E402

SOURCE = ROOT / "tests" / "e2e" / "workspaces" / "own_python"
LATER_DEFAULTS = (
    "--noenable_workspace",
    "--incompatible_autoload_externally=",
    "--incompatible_disallow_empty_glob",
    "--incompatible_auto_exec_groups",
)
TOOLCHAIN = """\
# Written by tests/e2e/own_python_test.py: the consumer's own interpreter.
load("{pair_bzl}", "py_runtime_pair")
{runtime_load}
py_runtime(
    name = "runtime",
    interpreter_path = "{python}",
    python_version = "PY3",
    stub_shebang = "#!{python}",
)

py_runtime_pair(
    name = "pair",
    py3_runtime = ":runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""


def _bare_python(directory: Path) -> Path:
    """A virtual environment of the interpreter running this test, without any package."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(directory)
    return directory / "bin" / "python3"


def _bare_system_python(directory: Path) -> Path:
    """A virtual environment of /usr/bin/python3 without its packages, made by hand:
    tools/bazel7 runs Bazel in the sid root, where that is Debian sid's Python."""
    (directory / "bin").mkdir(parents=True)
    (directory / "bin" / "python3").symlink_to("/usr/bin/python3")
    (directory / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\n")
    return directory / "bin" / "python3"


def _copy_workspace(tmp: Path, python: Path, *, bzlmod: bool) -> Path:
    workspace = tmp / "own_python"
    shutil.copytree(SOURCE, workspace)
    for name in ("WORKSPACE", "MODULE.bazel"):
        path = workspace / name
        text = path.read_text()
        assert 'path = "../../../..",' in text, f"{name} no longer points at the checkout"
        path.write_text(text.replace('path = "../../../..",', f'path = "{ROOT}",'))
    (workspace / "python").mkdir()
    (workspace / "python" / "BUILD.bazel").write_text(
        TOOLCHAIN.format(
            python=python,
            pair_bzl="@rules_python//python:defs.bzl"
            if bzlmod
            else "@bazel_tools//tools/python:toolchain.bzl",
            runtime_load='load("@rules_python//python:defs.bzl", "py_runtime")\n' if bzlmod else "",
        )
    )
    return workspace


class OwnPythonTest(absltest.TestCase):
    def check_report(self, run: gate_target.GateRun, workspace: Path) -> None:
        if run.report is None:
            logs = [run.log_path, run.test_log_path]
            tails = [path.read_text(errors="replace")[-3000:] for path in logs if path]
            self.fail(f"{run.problem}\n" + "\n".join(tails))
        self.assertEqual(run.report.decision, "promote", list(run.report.reasons))
        self.assertEqual(run.exit_code, 0)
        (row,) = run.report.rows
        self.assertEqual(row.property_id, "fixtures.read")
        self.assertEqual(list(row.exit_codes), [0, 0])
        # The runner sealed the fixture (its name is not ASCII) before and after each run.
        committed = (workspace / "fixtures.seal").read_text().split()[0]
        result = workspace / "bazel-bin" / "agent_gate.runs" / "fixtures.read.result.txtpb"
        runs = text_format.Parse(result.read_text(), agent_gate_pb2.RunResult()).runs
        self.assertLen(runs, 2)
        for each in runs:
            self.assertEqual([each.fixture_seal_before, each.fixture_seal_after], [committed] * 2)

    def test_bazel_4_workspace_keeps_its_python(self) -> None:
        tmp = Path(tempfile.mkdtemp(prefix="agent_gate-own-python-4-", dir="/var/tmp"))
        output_base = tmp / "output_base"
        startup = [f"--output_base={output_base}"]
        try:
            workspace = _copy_workspace(tmp, _bare_python(tmp / "consumer_python"), bzlmod=False)
            done = subprocess.run(
                ["bazel", *startup, "test", "//:own_python_test"],
                cwd=workspace,
                capture_output=True,
                text=True,
                errors="backslashreplace",
                check=False,
            )
            self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
            run = gate_target.run_gate(
                workspace,
                changed_paths=["fixtures/x"],
                run_id=gate_target.new_run_id("own-python"),
                output_base=output_base,
            )
            self.check_report(run, workspace)
        finally:
            subprocess.run(["bazel", *startup, "shutdown"], cwd=tmp, check=False)
            subprocess.run(["chmod", "-R", "u+w", str(tmp)], check=False)
            shutil.rmtree(tmp, ignore_errors=True)

    def test_bazel_7_module_keeps_its_python(self) -> None:
        lane = Bazel7Workspace("agent_gate-own-python-7-", name="unused")
        try:
            python = _bare_system_python(lane.tmp / "consumer_python")
            lane.root = _copy_workspace(lane.tmp, python, bzlmod=True)
            own = "--extra_toolchains=//python:toolchain"
            done = lane.bazel("test", *LATER_DEFAULTS, own, "//:own_python_test", timeout=900)
            self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
            # The binary the CLI would be told to use (a launcher is refused unless named).
            with mock.patch.dict(os.environ, {bazel_client.BAZEL_ENV: str(BAZEL7)}):
                run = gate_target.run_gate(
                    lane.root,
                    changed_paths=["fixtures/x"],
                    run_id=gate_target.new_run_id("own-python"),
                    extra_flags=[*LATER_DEFAULTS, own],
                    output_base=lane.output_base,
                    timeout_seconds=900,
                )
            self.check_report(run, lane.root)
        finally:
            lane.close()


if __name__ == "__main__":
    absltest.main()
