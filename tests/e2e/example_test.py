"""End to end: every example patch through a real `bazel test //:agent_gate`.

The example monorepo is copied once into a temporary directory, wired to this
checkout with `local_repository`, and committed as a git base; every case of
examples/patches/cases.yaml is scored in that one copy (one warm Bazel server,
one output base), then the server is shut down and the copy deleted. Besides
each case's decision and row facts (examples/cases.py `check`), this checks what
only a real Bazel can show: unmatched properties never run, a repeated run id is
served from Bazel's cache while a fresh one runs both runs again, a changed-path
list too long for the command line goes through an rc file, a build failure
yields no report (fail closed), and a plain `bazel test //...` stays green.

Run: cd /work/main && .venv/bin/python3 tests/e2e/example_test.py
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO_ROOT / "tools"), str(REPO_ROOT / "examples")]

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

import cases  # noqa: E402
import lane  # noqa: E402
from absl.testing import absltest, parameterized  # noqa: E402

from agent_gate.drive import bazel_client, gate_target  # noqa: E402

CASES = cases.load_cases()
_CASES_BY_NAME = {case.name: case for case in CASES}

_state: dict[str, object] = {}
_timings: list[tuple[str, float]] = []


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _workspace() -> cases.ExampleWorkspace:
    workspace = _state["workspace"]
    assert isinstance(workspace, cases.ExampleWorkspace)
    return workspace


def _timed(name: str, started: float) -> None:
    seconds = time.monotonic() - started
    _timings.append((name, seconds))
    warmth = "cold" if len(_timings) == 1 else "warm"
    _say(f"  e2e: {name}: {seconds:.1f}s ({warmth})")


def setUpModule() -> None:
    _state["started"] = time.monotonic()
    # Not below /tmp: Bazel 7's sandbox mounts its own /tmp over the workspace.
    top = Path(tempfile.mkdtemp(prefix="agent_gate_e2e-", dir="/var/tmp"))
    _state["top"] = top
    _state["workspace"] = cases.ExampleWorkspace.create(
        top / "monorepo", output_base=top / "output_base"
    )
    _say(f"  e2e: example workspace {top / 'monorepo'} on {lane.name()}")


def tearDownModule() -> None:
    top = _state.get("top")
    workspace = _state.get("workspace")
    try:
        if isinstance(workspace, cases.ExampleWorkspace):
            _say(f"  e2e: bazel shutdown -> exit {workspace.shutdown()}")
    finally:
        if isinstance(top, Path):
            cases.remove_tree(top)
    _say("  e2e timings (first one on a cold server):")
    for name, seconds in _timings:
        _say(f"    {seconds:6.1f}s  {name}")
    started = _state.get("started")
    if isinstance(started, float):
        _say(f"    {time.monotonic() - started:6.1f}s  total, setup and shutdown included")


class DecisionTableTest(parameterized.TestCase):
    """Each case of cases.yaml reaches its decision, for the reasons the manifest names."""

    @parameterized.named_parameters((case.name, case) for case in CASES)
    def test(self, case: cases.Case) -> None:
        workspace = _workspace()
        started = time.monotonic()
        result = workspace.score(case)
        _timed(f"{case.name} -> {result.decision}", started)
        self.assertIsNotNone(result.run.report, result.run.problem)
        self.assertEqual(cases.check(result), [])
        report = result.run.report
        assert report is not None
        self.assertEqual(report.run_id, result.run.run_id)
        # Only matched properties run; the others leave no result of this run.
        for row in report.rows:
            run_result = workspace.run_result(row.property_id)
            seen = run_result.run_id if run_result is not None else None
            if row.matched:
                self.assertEqual(seen, result.run.run_id, row.property_id)
                self.assertLen(run_result.runs, 2)
            else:
                self.assertNotEqual(seen, result.run.run_id, row.property_id)
                self.assertEqual(row.classification, "not_run")
                self.assertEmpty(row.exit_codes)
        if case.expect == "hold":
            flakes = [row for row in report.rows if row.classification == "flake"]
            self.assertNotEmpty(flakes)
            for row in flakes:
                self.assertNotEqual(row.exit_codes[0], row.exit_codes[1])


class GateMechanicsTest(absltest.TestCase):
    """What the gate relies on Bazel for, checked on the real thing."""

    def test_same_run_id_is_cached_and_a_fresh_one_runs_again(self) -> None:
        workspace = _workspace()
        started = time.monotonic()
        touched, _ = workspace.prepare(_CASES_BY_NAME["hold_split_exits"])
        result_file = (
            workspace.root / "bazel-bin" / "agent_gate.runs" / "counter.monotonic_under_replay"
        )
        result_file = result_file.with_name(result_file.name + ".result.txtpb")

        first = workspace.run_gate(touched, run_id=gate_target.new_run_id("same"))
        self.assertEqual(first.decision, "hold", first.problem)
        before = (result_file.stat().st_mtime_ns, result_file.read_bytes())

        again = workspace.run_gate(touched, run_id=first.run_id)
        self.assertEqual(again.decision, "hold", again.problem)
        self.assertEqual((result_file.stat().st_mtime_ns, result_file.read_bytes()), before)

        fresh = workspace.run_gate(touched, run_id=gate_target.new_run_id("fresh"))
        self.assertEqual(fresh.decision, "hold", fresh.problem)
        rerun = workspace.run_result("counter.monotonic_under_replay")
        assert rerun is not None
        self.assertEqual(rerun.run_id, fresh.run_id)
        self.assertNotEqual(result_file.stat().st_mtime_ns, before[0])
        # Run again for real, the deterministic flake splits the same way.
        self.assertEqual([run.exit_code for run in rerun.runs], [0, 1])
        _timed("same run id twice, then a fresh one (3 gate runs)", started)

    def test_a_long_changed_path_list_goes_through_an_rc_file(self) -> None:
        workspace = _workspace()
        started = time.monotonic()
        touched, _ = workspace.prepare(_CASES_BY_NAME["promote"])
        padding = [f"docs/generated/{index:05d}/{'page-' * 10}.md" for index in range(3000)]
        paths = touched + padding
        self.assertGreater(len(",".join(paths)), 128 * 1024)
        run = workspace.run_gate(paths, run_id=gate_target.new_run_id("long"))
        self.assertIsNotNone(run.rc_path)
        self.assertIsNotNone(run.report, run.problem)
        assert run.report is not None
        self.assertEqual(run.report.changed_path_count, len(paths))
        self.assertEqual(run.decision, "promote", run.report.rule)
        self.assertEqual(run.exit_code, 0)
        _timed(f"{len(paths)} changed paths through {run.rc_path.name}", started)

    def test_a_build_failure_has_no_report(self) -> None:
        workspace = _workspace()
        started = time.monotonic()
        workspace.reset()
        build = workspace.root / "store" / "counters" / "BUILD.bazel"
        build.write_text(build.read_text(encoding="utf-8") + "\nthis is not starlark(\n")
        run = workspace.run_gate(
            ["store/counters/BUILD.bazel"], run_id=gate_target.new_run_id("broken")
        )
        self.assertIsNone(run.report)
        self.assertNotIn(run.exit_code, (0, 3))
        self.assertIn("before the gate could decide", run.problem or "")
        workspace.reset()
        _timed("build failure -> no report", started)

    def test_update_seal_rewrites_the_seal_as_coreutils_computes_it(self) -> None:
        workspace = _workspace()
        started = time.monotonic()
        workspace.reset()
        events = workspace.root / "fixtures" / "replays" / "events.log"
        events.write_text(events.read_text(encoding="utf-8") + "7 signups incr 1\n")
        done = subprocess.run(
            [
                bazel_client.find_bazel(workspace.bazel_binary),
                *workspace.startup_flags,
                "run",
                "//fixtures/replays:replays.update_seal",
            ],
            cwd=workspace.root,
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        pipeline = subprocess.run(
            "find fixtures/replays -type f ! -name '*.seal' -print0 | LC_ALL=C sort -z"
            " | xargs -0 sha256sum | sha256sum",
            shell=True,
            cwd=workspace.root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        seal_file = workspace.root / "fixtures" / "replays" / "replays.seal"
        self.assertEqual(seal_file.read_text(encoding="utf-8"), pipeline)
        # A committed file a person can edit, not the read-only build output's mode.
        self.assertEqual(seal_file.stat().st_mode & 0o777, 0o644)
        self.assertIn("reviewed change", done.stdout)
        workspace.reset()
        _timed("update_seal after a fixture edit", started)

    def test_plain_bazel_test_of_everything_stays_green(self) -> None:
        workspace = _workspace()
        started = time.monotonic()
        workspace.reset()
        lines: list[str] = []
        exit_code = workspace.bazel_test_all(progress=lines.append)
        self.assertEqual(exit_code, 0, "\n".join(lines[-30:]))
        _timed("bazel test //... without flags", started)


if __name__ == "__main__":
    absltest.main()
