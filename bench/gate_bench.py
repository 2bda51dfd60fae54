"""2. Gate overhead: `bazel test //:agent_gate` vs `bazel test --runs_per_test=2`.

One consumer workspace (WORKSPACE = local_repository + agent_gate_dependencies(),
as docs/rules.md tells users) with two packages, one per flavour of property:

* `sleep/`: each property wraps an `sh_test` that sleeps;
* `work/`: each property wraps a `py_test` that hashes MiBs and sieves primes.

Each package holds max(N) strong properties `p<i>` (locality `p<i>`, each
wrapping its own test `t<i>`) and one `agent_gate`. For each N, the gate runs with
`changed_paths=p0/x,...,p{N-1}/x` and a fresh run id (so N properties match and
run twice); the alternative is `bazel test --runs_per_test=2
--nocache_test_results` of the same N wrapped tests.

Each side has its own warm Bazel server on the same workspace (two output
bases): the gate's flags change on every run (a fresh run id), which discards
Bazel's analysis cache; the alternative's flags never change, so its cache stays
warm, as it would for a user running only that command. Repetitions alternate
the order of the two sides.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import time
import uuid
from pathlib import Path

from harness import (
    BAZEL_4,
    Bazel,
    BenchError,
    Check,
    Context,
    Lane,
    Plan,
    Profile,
    Section,
    Series,
    Table,
    consumer_workspace,
    gated_build,
    ratio,
    ratio_spread,
    read_profile,
)

FLAVOURS = ("sleep", "work")
_EXECUTED = re.compile(rb"Executed (\d+) out of (\d+) tests?")

_SLEEP_SH = """#!/bin/sh
# A property that waits: what Bazel's own per-run cost looks like next to ours.
sleep {seconds}
"""

_WORK_PY = '''"""A property that does real work: hash {mib} MiB, sieve the primes below {limit}."""

import hashlib
import sys

BLOCK = bytes(range(256)) * 4096


def main() -> int:
    digest = hashlib.sha256()
    for _ in range({mib}):
        digest.update(BLOCK)
    sieve = bytearray([1]) * {limit}
    sieve[0] = sieve[1] = 0
    for i in range(2, {limit}):
        if sieve[i]:
            for j in range(i * i, {limit}, i):
                sieve[j] = 0
    return 0 if sum(sieve) > 0 and len(digest.hexdigest()) == 64 else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def write_workspace(root: Path, plan: Plan, lane: Lane = BAZEL_4) -> None:
    consumer_workspace(root, "gate_bench", lane)
    (root / "BUILD.bazel").write_text("")
    count = max(plan.gate_counts)
    sleep = root / "sleep"
    sleep.mkdir()
    script = sleep / "sleep.sh"
    script.write_text(_SLEEP_SH.format(seconds=plan.gate_sleep_seconds))
    script.chmod(0o755)
    (sleep / "BUILD.bazel").write_text(gated_build(count, "sh_test", "sleep.sh"))
    work = root / "work"
    work.mkdir()
    (work / "work_test.py").write_text(
        _WORK_PY.format(mib=plan.gate_work_mib, limit=plan.gate_work_sieve)
    )
    (work / "BUILD.bazel").write_text(
        gated_build(count, "py_test", "work_test.py", main="work_test.py")
    )
    for package in (sleep, work):
        (package / "ledger.txtpb").write_text("# No freezes: every matched property votes.\n")


def _gate_args(flavour: str, count: int, run_id: str) -> list[str]:
    paths = ",".join(f"p{i}/x" for i in range(count))
    return [
        "test",
        f"//{flavour}:agent_gate",
        f"--@agent_gate//:changed_paths={paths}",
        f"--@agent_gate//:run_id={run_id}",
    ]


def _baseline_args(flavour: str, count: int) -> list[str]:
    return [
        "test",
        "--runs_per_test=2",
        "--nocache_test_results",
        *(f"//{flavour}:t{i}" for i in range(count)),
    ]


def _check_gate(workspace: Path, flavour: str, count: int, run_id: str) -> float:
    """Every matched property ran twice under this run id and passed; returns their run time."""
    runs = workspace / "bazel-bin" / flavour / "agent_gate.runs"
    own = 0.0
    for i in range(count):
        path = runs / f"p{i}.result.txtpb"
        try:
            text = path.read_text()
        except OSError as error:
            raise BenchError(f"gate run {run_id}: no run result for p{i}: {error}") from error
        if f'run_id: "{run_id}"' not in text or 'classification: "pass"' not in text:
            raise BenchError(
                f"gate run {run_id}: {path} is not a fresh passing double run:\n{text}"
            )
        own += sum(float(value) for value in re.findall(r"duration_seconds: ([0-9.]+)", text))
    return own


def _check_baseline(output: bytes, workspace: Path, flavour: str, count: int, since: float) -> None:
    """Bazel ran each of the N tests, twice, in this command."""
    found = _EXECUTED.search(output)
    if found is None or int(found.group(1)) != count or int(found.group(2)) != count:
        raise BenchError(f"baseline did not execute {count} tests:\n{output[-2000:].decode()}")
    for i in range(count):
        log = workspace / "bazel-testlogs" / flavour / f"t{i}" / "run_2_of_2" / "test.log"
        if not log.exists() or log.stat().st_mtime < since - 1:
            raise BenchError(f"baseline: {log} was not written by this run")


def _phase(seconds: float) -> str:
    # Bazel 7 interleaves analysis with execution: its profile has no analysis phase alone.
    return "n/a (interleaved with execution)" if math.isnan(seconds) else f"{seconds:.2f} s"


def bench(ctx: Context, lane: Lane = BAZEL_4) -> Section:
    plan = ctx.plan
    if lane.bzlmod:
        section = Section(key="gate7", title=f"2b. Gate overhead on Bazel {lane.version}")
    else:
        section = Section(key="gate", title="2. Gate overhead")
    workspace = ctx.scratch("gate", lane) / "ws"
    write_workspace(workspace, plan, lane)
    gate = Bazel(workspace, output_base=workspace.parent / "output-gate", lane=lane)
    base = Bazel(workspace, output_base=workspace.parent / "output-baseline", lane=lane)
    profiles = workspace.parent / "profiles"
    profiles.mkdir()
    largest = max(plan.gate_counts)
    try:
        ctx.log("gate: warming both servers (build everything, one run of each side)")
        packages = [f"//{flavour}:all" for flavour in FLAVOURS]
        gate.together(base, ["build", *packages], ["build", "--runs_per_test=2", *packages])
        for flavour in FLAVOURS if plan.warmup else ():
            run_id = f"warmup-{uuid.uuid4().hex[:12]}"
            gate(*_gate_args(flavour, 1, run_id))
            _check_gate(workspace, flavour, 1, run_id)
            base(*_baseline_args(flavour, 1))

        table = Table(
            [
                "flavour",
                "N",
                "gate",
                "runs_per_test=2",
                "ratio (range)",
                "goal",
                "gate analysis (last rep)",
                "runs' own time, sum",
                "other processes (cores)",
            ]
        )
        actions = Table(
            [
                "flavour",
                "N",
                "PropertyDoubleRun action, mean",
                "agent_gate test action",
                "one test run (Bazel), mean",
                "2 x one test run",
            ]
        )
        for count in plan.gate_counts:
            reps = plan.gate_reps_large if count == largest and count > 1 else plan.gate_reps
            goal = 1.2 if count == 1 else 1.0
            for flavour in FLAVOURS:
                ctx.log(f"gate: {flavour}, N={count}, {reps} reps")
                gate_s: list[float] = []
                base_s: list[float] = []
                own_s: list[float] = []
                others: list[float] = []
                last: dict[str, Profile] = {}
                for rep in range(reps):
                    profiled = rep == reps - 1
                    sides = ("gate", "baseline") if rep % 2 == 0 else ("baseline", "gate")
                    for side in sides:
                        profile = profiles / f"{side}-{flavour}-{count}.json"
                        extra = [f"--profile={profile}"] if profiled else []
                        if side == "gate":
                            run_id = f"bench-{uuid.uuid4().hex[:12]}"
                            usage, _ = gate.measured(*_gate_args(flavour, count, run_id), *extra)
                            own_s.append(_check_gate(workspace, flavour, count, run_id))
                            gate_s.append(usage.wall)
                        else:
                            since = time.time()
                            usage, result = base.measured(*_baseline_args(flavour, count), *extra)
                            _check_baseline(
                                result.stderr + result.stdout, workspace, flavour, count, since
                            )
                            base_s.append(usage.wall)
                        others.append(usage.others_cores)
                        if profiled:
                            last[side] = read_profile(profile)
                ours, theirs = Series(tuple(gate_s)), Series(tuple(base_s))
                section.checks.append(
                    Check(
                        f"gate overhead, {flavour}, N={count}: gate / runs_per_test=2"
                        + lane.suffix,
                        ratio(ours, theirs),
                        goal,
                    )
                )
                table.rows.append(
                    [
                        flavour,
                        str(count),
                        ours.show(),
                        theirs.show(),
                        ratio_spread(ours, theirs),
                        f"<= {goal}",
                        _phase(last["gate"].analysis_seconds),
                        Series(tuple(own_s)).show(),
                        f"{statistics.median(others):.2f}",
                    ]
                )
                double = last["gate"].durations("Running property ")
                tests = last["baseline"].durations(f"Testing //{flavour}:t")
                gate_test = last["gate"].durations(f"Testing //{flavour}:agent_gate")
                one = sum(tests) / len(tests) if tests else float("nan")
                actions.rows.append(
                    [
                        flavour,
                        str(count),
                        f"{sum(double) / len(double):.3f} s" if double else "?",
                        f"{gate_test[0]:.3f} s" if gate_test else "?",
                        f"{one:.3f} s",
                        f"{2 * one:.3f} s",
                    ]
                )
    finally:
        gate.shutdown()
        base.shutdown()
        ctx.discard(workspace.parent)

    section.tables.append(("Wall time of the command, median (min-max)", table))
    section.tables.append(
        (
            "Where the time goes (Bazel `--profile` of the last repetition; "
            "Bazel runs 2 actions at a time on 2 cores)",
            actions,
        )
    )
    section.commands = [
        "bazel test //FLAVOUR:agent_gate --@agent_gate//:changed_paths=p0/x,...,p{N-1}/x "
        "--@agent_gate//:run_id=<fresh uuid>",
        "bazel test --runs_per_test=2 --nocache_test_results //FLAVOUR:t0 ... //FLAVOUR:t{N-1}",
    ]
    section.method = [
        f"sleep: `sh_test` sleeping {plan.gate_sleep_seconds} s; work: `py_test` hashing "
        f"{plan.gate_work_mib} MiB and sieving the primes below {plan.gate_work_sieve:,} "
        "in pure Python.",
        f"{largest} properties per flavour, N of them matched; reps: {plan.gate_reps} "
        f"({plan.gate_reps_large} for N = {largest}), order alternating; every gate run is "
        "checked to have run each matched property twice under its own run id and passed, "
        "every baseline run to have run each test twice.",
        "Two warm servers on one workspace (two `--output_base`s), so the alternative's "
        "analysis cache is never discarded by the gate's changing flags. `.bazelrc`: "
        "`build --nosandbox_debug`, `build --incompatible_strict_action_env`; "
        "everything else Bazel's defaults (linux-sandbox, --jobs = cores).",
        *(
            [
                f"Bazel {lane.version}: `bazel` is tools/bazel7 (a private mount namespace "
                "around Debian sid's Bazel, with tools/bazel7.bazelrc: offline modules and the "
                "defaults Bazel 8 and 9 flipped); the workspace is a bzlmod consumer "
                '(`bazel_dep(name = "agent_gate")` and `local_path_override`).'
            ]
            if lane.bzlmod
            else []
        ),
        "`gate analysis` is the gate's loading-and-analysis phase: a fresh run id is a "
        "new configuration, so Bazel re-analyses on every gate run. `runs' own time` is "
        "the sum of both runs of every matched property as the runner timed them. "
        "`other processes`: cores the rest of this shared machine kept busy during the "
        "timed commands (all CPU in /proc/stat minus the client's, the server's and its "
        "actions'), median.",
    ]
    section.notes.append(f"Workspace: `{workspace}` (deleted afterwards); cores: {os.cpu_count()}.")
    return section
