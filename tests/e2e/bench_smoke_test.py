"""Smoke run of every benchmark of bench/ at tiny size, so none of them can rot.

`bench/run --scale 0.0001 --reps 1` runs each benchmark end to end (a few KiB of
seal trees, N = 1 gate runs, a 2-target analysis workspace, a 10 x 100
evaluator, a cold and two warm scores of the CLI's example patch; the gate and
score benchmarks on the Bazel 7.7.1 lane too), with every
correctness check the full run makes (same digest as the coreutils pipeline, each
gate run fresh and passing, each baseline test run twice), and writes the results
file. The figures of a smoke run mean nothing;
that it completes and reports every figure does.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from absl.testing import absltest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import harness  # noqa: E402
import run as bench_run  # noqa: E402

# Every figure the smoke run must report, by the start of its name.
FIGURES = (
    "seal, large files: ours / pipeline",
    "seal, large files: share of the 2-core SHA-256 limit",
    "seal, tiny files: ours / pipeline",
    "gate overhead, sleep, N=1",
    "gate overhead, work, N=1",
    "evaluator: 10 properties x 100 paths",
    "analysis, K=2, all matched",
    "analysis, K=2, none matched",
    "analysis, K=2, tests in another package",
    "second score: agent-gate score / runs_per_test=2 alone",
    # The Bazel 7.7.1 lane's (tools/bazel7, bzlmod).
    "gate overhead, sleep, N=1: gate / runs_per_test=2, Bazel 7.7.1",
    "gate overhead, work, N=1: gate / runs_per_test=2, Bazel 7.7.1",
    "second score: agent-gate score / runs_per_test=2 alone, Bazel 7.7.1",
)
# Where the 7.7.1 lane's benchmarks make their scratch (outside /tmp).
LANE_SCRATCH = Path("/var/tmp")


class BenchSmokeTest(absltest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="agent_gate-bench-smoke-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def test_every_benchmark_runs_at_tiny_size(self):
        out = self.tmp / "RESULTS.md"
        lane_before = set(LANE_SCRATCH.glob("agent_gate-bench-*"))
        started = time.monotonic()
        result = subprocess.run(
            [
                str(ROOT / "bench" / "run"),
                "--scale",
                "0.0001",
                "--reps",
                "1",
                "--out",
                str(out),
                "--workdir",
                str(self.tmp / "work"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        elapsed = time.monotonic() - started
        self.assertEqual(result.returncode, 0, result.stderr[-5000:])
        text = out.read_text()
        for figure in FIGURES:
            self.assertIn(f"| {figure}", text)
        for failed in ("FAILED", "CRASHED"):
            self.assertNotIn(failed, text)
        for title in ("1. Seal throughput", "2. Gate overhead", "3. Evaluator scale"):
            self.assertIn(f"## {title}", text)
        self.assertIn("## 4. Analysis scale", text)
        self.assertIn("## 5. Second-score cost of the CLI", text)
        self.assertIn("## 2b. Gate overhead on Bazel 7.7.1", text)
        self.assertIn("## 5b. Second-score cost of the CLI on Bazel 7.7.1", text)
        self.assertIn("## Both Bazel versions side by side", text)
        self.assertIn("| gate overhead, work, N=1: gate / runs_per_test=2 | ", text)
        self.assertIn("| step | seconds |", text)  # the CLI's timing breakdown
        self.assertIn("## Machine", text)
        # Each benchmark cleaned up its trees and workspaces (their servers are shut down).
        leftovers = sorted(p.name for p in (self.tmp / "work").iterdir())
        self.assertEqual(leftovers, [], leftovers)
        lane_left = sorted(set(LANE_SCRATCH.glob("agent_gate-bench-*")) - lane_before)
        self.assertEqual(lane_left, [], "the 7.7.1 lane's scratch was left behind")
        print(f"bench smoke run: {elapsed:.1f} s", file=sys.stderr)

    def test_default_plan_is_the_documented_full_size(self):
        plan = harness.Plan.for_scale(1.0)
        self.assertEqual(plan.seal_large_bytes, 2 * harness.GIB)
        self.assertEqual(plan.seal_large_files, 4000)
        self.assertEqual(plan.seal_tiny_files, 200_000)
        self.assertEqual(plan.gate_counts, (1, 8, 64))
        self.assertEqual(plan.evaluator_catalogs, (1_000, 10_000))
        self.assertEqual(plan.evaluator_diffs, (10_000, 100_000))
        self.assertEqual(plan.analysis_counts, (1_000, 5_000))
        self.assertEqual(plan.score_reps, 5)
        self.assertEqual(
            set(bench_run.BENCHMARKS),
            {"seal", "gate", "evaluator", "analysis", "score", "gate7", "score7"},
        )

    def test_partial_runs_never_replace_the_committed_results(self):
        args = bench_run._arguments(["--only", "evaluator"])
        self.assertIsNone(args.out)
        self.assertNotEqual(bench_run.PARTIAL_OUT, bench_run.DEFAULT_OUT.name)


if __name__ == "__main__":
    absltest.main()
