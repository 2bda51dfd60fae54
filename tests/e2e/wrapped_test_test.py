"""A wrapped test that needs its `args` and `env`, on both Bazel lanes: the double run
invokes it as `bazel test` does.

tests/e2e/workspaces/wrapped has `needs_args_test`, whose check passes only with
its own `args` and `env` expanded as Bazel expands them (`$(location)`,
`$(rootpath)`, `$(execpath)`, `$(locations)`, a Make variable, `$$`, shell-style
words), and `bare_test`, the same check without them. On Bazel 4.2.3 (WORKSPACE)
and on 7.7.1 (bzlmod, the Bazel 8/9 defaults):

* `bazel test //needs:bare_test` fails: the check is real;
* the gate with a change under the first property's locality promotes, both runs
  exit 0, and each printed the very arguments and variables that
  `bazel test //needs:needs_args_test` printed;
* the gate with a change under the second rejects, both runs exit 1;
* a patch editing the test's `args` or `env` (its BUILD file, under the first
  property's locality) is review, never a run with the patch's arguments.

The 7.7.1 half needs root and the sid root (tools/bootstrap_bazel7).
Run: .venv/bin/python3 tests/e2e/wrapped_test_test.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools"), str(ROOT / "tests" / "e2e")]

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

from absl.testing import absltest  # noqa: E402
from bazel7_workspace import Bazel7Workspace  # noqa: E402

from agent_gate.drive import bazel_client, gate_target  # noqa: E402

SOURCE = ROOT / "tests" / "e2e" / "workspaces" / "wrapped"
# The line check.sh prints with its arguments and variables.
INVOKED = "invoked with: "
LATER_DEFAULTS = (
    "--noenable_workspace",
    "--incompatible_autoload_externally=",
    "--incompatible_disallow_empty_glob",
    "--incompatible_auto_exec_groups",
    "--spawn_strategy=linux-sandbox",
)


def _copy(destination: Path) -> None:
    shutil.copytree(SOURCE, destination)
    for name in ("WORKSPACE", "MODULE.bazel"):
        path = destination / name
        text = path.read_text()
        assert 'path = "../../../..",' in text, f"{name} no longer points at the checkout"
        path.write_text(text.replace('path = "../../../..",', f'path = "{ROOT}",'))


class _Lane:
    """The assertions, shared by both lanes."""

    bazel: str
    flags: tuple[str, ...] = ()
    workspace: Path
    output_base: Path

    def gate(self, path: str) -> gate_target.GateRun:
        with mock.patch.dict(os.environ, {bazel_client.BAZEL_ENV: self.bazel}):
            run = gate_target.run_gate(
                self.workspace,
                changed_paths=[path],
                run_id=gate_target.new_run_id("wrapped"),
                extra_flags=self.flags,
                startup_flags=(f"--output_base={self.output_base}",),
                timeout_seconds=900,
            )
        if run.report is None:
            raise AssertionError(f"no report: {run.problem}")
        return run

    def plain_test(self, target: str) -> subprocess.CompletedProcess[str]:
        command = [self.bazel, f"--output_base={self.output_base}", "test", "--test_output=all"]
        return subprocess.run(
            [*command, *self.flags, target],
            cwd=self.workspace,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    def row(self, run: gate_target.GateRun, property_id: str):
        (found,) = [row for row in run.report.rows if row.property_id == property_id]
        return found

    def test_bazel_test_itself_needs_the_args_and_env(self) -> None:
        failed = self.plain_test("//needs:bare_test")
        self.assertEqual(failed.returncode, 3, failed.stderr[-3000:])

    def test_the_double_run_invokes_it_as_bazel_test_does(self) -> None:
        passed = self.plain_test("//needs:needs_args_test")
        self.assertEqual(passed.returncode, 0, passed.stderr[-3000:])
        (by_bazel,) = [line for line in passed.stdout.splitlines() if line.startswith(INVOKED)]
        run = self.gate("needs/x")
        row = self.row(run, "wrapped.needs_args")
        evidence = "\n".join(item.output_tail for item in row.evidence)
        self.assertEqual(list(row.exit_codes), [0, 0], evidence)
        self.assertEqual(run.decision, "promote", list(run.report.reasons))
        self.assertTrue(run.report.runs_fresh, "the runs are this run id's own")
        runs = self.workspace / "bazel-bin" / "agent_gate.runs"
        for number in (1, 2):
            log = (runs / f"wrapped.needs_args.run{number}.log").read_text()
            (by_gate,) = [line for line in log.splitlines() if line.startswith(INVOKED)]
            self.assertEqual(by_gate, by_bazel, f"run {number}")

    def test_without_them_the_same_check_fails(self) -> None:
        run = self.gate("bare/x")
        row = self.row(run, "wrapped.bare")
        self.assertEqual(list(row.exit_codes), [1, 1])
        self.assertEqual(run.decision, "reject")
        evidence = "\n".join(item.output_tail for item in row.evidence)
        self.assertIn("check: want 7 arguments, got 0", evidence)

    def test_a_patch_editing_the_tests_args_or_env_is_review(self) -> None:
        """The BUILD file declaring the test is guarded, though a locality covers it."""
        build = self.workspace / "needs" / "BUILD.bazel"
        original = build.read_text()
        for name, edit in (
            ("args", ('"$$LITERAL"', '"$$ANYTHING"')),
            ("env", ('"TZ": "Europe/Paris"', '"TZ": "UTC"')),
        ):
            with self.subTest(edit=name):
                self.assertIn(edit[0], original)
                build.write_text(original.replace(*edit))
                try:
                    run = self.gate("needs/BUILD.bazel")
                finally:
                    build.write_text(original)
                self.assertEqual(run.decision, "review", list(run.report.reasons))
                (guarded,) = run.report.guarded_paths
                self.assertTrue(guarded.startswith("needs/BUILD.bazel ("), guarded)
                self.assertIn("declaring the test of", guarded)
                self.assertIn("wrapped.needs_args", guarded)


class Bazel4Test(_Lane, absltest.TestCase):
    """Bazel 4.2.3, WORKSPACE."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.bazel = shutil.which("bazel") or "bazel"
        cls.top = Path(tempfile.mkdtemp(prefix="agent_gate-wrapped-", dir="/var/tmp"))
        cls.workspace = cls.top / "wrapped"
        cls.output_base = cls.top / "output_base"
        _copy(cls.workspace)

    @classmethod
    def tearDownClass(cls) -> None:
        bazel_client.shutdown(cls.workspace, output_base=cls.output_base)
        subprocess.run(["chmod", "-R", "u+w", str(cls.top)], check=False)
        shutil.rmtree(cls.top, ignore_errors=True)
        super().tearDownClass()


class Bazel7Test(_Lane, absltest.TestCase):
    """Bazel 7.7.1, bzlmod, with the defaults Bazel 8 and 9 flipped."""

    flags = LATER_DEFAULTS

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.lane = Bazel7Workspace("agent_gate-wrapped7-", name="wrapped")
        cls.bazel = str(ROOT / "tools" / "bazel7")
        cls.workspace = cls.lane.root
        cls.output_base = cls.lane.output_base
        _copy(cls.workspace)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.lane.close()
        super().tearDownClass()


if __name__ == "__main__":
    absltest.main()
