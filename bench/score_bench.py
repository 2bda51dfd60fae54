"""5. Second-score cost of the CLI: `agent-gate score` on a warm worktree vs the runs alone.

A git copy of examples/monorepo (its WORKSPACE's `local_repository(path = "../..")`
rewritten to this checkout), scored once untimed so the scoring worktree
(`$XDG_CACHE_HOME/agent_gate/monorepo-<hash>/scoring`, a cache directory of this
run outside /tmp, which the sandbox hides) and its Bazel server exist and are warm. Then,
interleaved, order alternating:

* ours: `tools/agent-gate score --patch examples/patches/promote_refactor.patch
  --workspace <copy> --quiet --report <tmp>` (a second score of a patch on the warm
  worktree: reset, catalog, seals, apply, `bazel test //:agent_gate`, report);
* the alternative: `bazel test --runs_per_test=2 --nocache_test_results` of the
  property targets that patch matches, in the scoring worktree, on the same warm
  server, which is what a user would run instead of the gate.

Each score must promote and run exactly the expected properties twice under its
own run id; each baseline must execute each of those tests twice. One more score
without `--quiet` gives the CLI's `timing:` line, the breakdown of where a score's
time goes.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import (
    BAZEL_4,
    ROOT,
    Bazel,
    BenchError,
    Check,
    Context,
    Lane,
    Section,
    Series,
    Table,
    ratio,
    ratio_spread,
    timed,
)

sys.path.insert(0, str(ROOT / "examples"))
import wired_copy

CLI = ROOT / "tools" / "agent-gate"
EXAMPLE = ROOT / "examples" / "monorepo"
PATCH = ROOT / "examples" / "patches" / "promote_refactor.patch"
# The properties promote_refactor.patch matches (checked on every score).
MATCHED = ("resp.no_secret_fields", "resp.keys_present", "counter.monotonic_under_replay")
GOAL = 1.3

_EXECUTED = re.compile(rb"Executed (\d+) out of (\d+) tests?")
_TIMING_PART = re.compile(r"([a-z][a-z ]*?) ([0-9.]+)s")
_ELAPSED = re.compile(r"INFO: Elapsed time: ([0-9.]+)s, Critical Path: ([0-9.]+)s")
_DISCARDED = "discarding analysis cache"


def make_repo(copy: Path) -> None:
    """A git repository holding examples/monorepo, wired to this checkout."""
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("bazel-*", "__pycache__"))
    try:
        wired_copy.wire_copy(copy, ROOT)
        for args in (
            ("init", "-q", "-b", "main"),
            ("add", "-A"),
            ("commit", "-q", "-m", "base: examples/monorepo"),
        ):
            wired_copy.git(copy, *args)
    except wired_copy.CopyError as error:
        raise BenchError(str(error)) from None


def _score_argv(copy: Path, report: Path, quiet: bool = True) -> list[str]:
    argv = [str(CLI), "score", "--patch", str(PATCH), "--workspace", str(copy)]
    return [*argv, *(["--quiet"] if quiet else []), "--report", str(report)]


def _check_score(report: Path, scoring: Path) -> float:
    """The score promoted and ran each expected property twice; returns their runs' time."""
    data = json.loads(report.read_text())
    if data.get("decision") != "promote":
        raise BenchError(f"score of {PATCH.name} decided {data.get('decision')}, not promote")
    matched = sorted(
        row.get("propertyId", row.get("property_id", ""))
        for row in data.get("rows", [])
        if row.get("matched")
    )
    if matched != sorted(MATCHED):
        raise BenchError(f"score matched {matched}, expected {sorted(MATCHED)}")
    run_id = data.get("runId", data.get("run_id", ""))
    own = 0.0
    for property_id in MATCHED:
        path = scoring / "bazel-bin" / "agent_gate.runs" / f"{property_id}.result.txtpb"
        text = path.read_text()
        if f'run_id: "{run_id}"' not in text or text.count("run_number:") != 2:
            raise BenchError(f"{path} is not a fresh double run of run id {run_id}:\n{text}")
        own += sum(float(value) for value in re.findall(r"duration_seconds: ([0-9.]+)", text))
    return own


def _check_baseline(output: bytes, scoring: Path, since: float) -> None:
    found = _EXECUTED.search(output)
    count = len(MATCHED)
    if found is None or int(found.group(1)) != count or int(found.group(2)) != count:
        raise BenchError(f"baseline did not execute {count} tests:\n{output[-2000:].decode()}")
    for property_id in MATCHED:
        log = scoring / "bazel-testlogs" / property_id / "run_2_of_2" / "test.log"
        if not log.exists() or log.stat().st_mtime < since - 1:
            raise BenchError(f"baseline: {log} was not written by this run")


def parse_timing(stderr: str) -> dict[str, float]:
    """`timing: worktree 0.1s, catalog 1.2s, ..., total 5.0s` as a dict."""
    line = next((text for text in stderr.splitlines() if "timing:" in text), "")
    if not line:
        raise BenchError(f"agent-gate score printed no timing line:\n{stderr[-2000:]}")
    return {
        name.strip(): float(value)
        for name, value in _TIMING_PART.findall(line.split("timing:", 1)[1])
    }


def bazel_elapsed(log: str) -> tuple[float, float, bool]:
    """Bazel's own `Elapsed time` and `Critical Path` of one command's console output, and
    whether it discarded its analysis cache (build options changed since the last command)."""
    found = _ELAPSED.search(log)
    if found is None:
        return float("nan"), float("nan"), _DISCARDED in log
    return float(found.group(1)), float(found.group(2)), _DISCARDED in log


def _run_id(report: Path) -> str:
    data = json.loads(report.read_text())
    return data.get("run_id", data.get("runId", ""))


def _shutdown_and_remove(server: Bazel) -> None:
    """Stop the scoring worktree's server and delete its output base: no later run uses it.

    The CLI runs Bazel with its default output base, keyed by the worktree's path; it is
    deleted only when Bazel's DO_NOT_BUILD_HERE names that worktree.
    """
    found = server(*("info", "output_base"), check=False)[1].stdout.decode().strip()
    server.shutdown()
    output_base = Path(found) if found else None
    if output_base is None:
        return
    try:
        named = (output_base / "DO_NOT_BUILD_HERE").read_text().strip()
    except OSError:
        return
    if Path(named) == server.workspace:
        subprocess.run(["chmod", "-R", "u+w", str(output_base)], capture_output=True, check=False)
        shutil.rmtree(output_base, ignore_errors=True)


def bench(ctx: Context, lane: Lane = BAZEL_4) -> Section:
    plan = ctx.plan
    if lane.bzlmod:
        title = f"5b. Second-score cost of the CLI on Bazel {lane.version}"
        section = Section(key="score7", title=title)
    else:
        section = Section(key="score", title="5. Second-score cost of the CLI")
    scratch = ctx.scratch("score", lane)
    copy = scratch / "monorepo"
    reports = scratch / "reports"
    reports.mkdir()
    make_repo(copy)
    # The scoring worktree lives in the cache directory; not under /tmp, which every
    # sandboxed action gets as a private tmpfs (the CLI refuses a worktree there).
    cache = Path(tempfile.mkdtemp(prefix="agent_gate-bench-cache-", dir="/var/tmp"))
    env = {**lane.env(), "XDG_CACHE_HOME": str(cache)}
    scoring = cache / "agent_gate" / "none" / "scoring"
    server = Bazel(scoring, lane=lane)
    baseline = [
        "test",
        "--runs_per_test=2",
        "--nocache_test_results",
        *(f"//:{property_id}" for property_id in MATCHED),
    ]
    try:
        ctx.log("score: first score (untimed: creates the scoring worktree, starts its server)")
        first, _ = timed(_score_argv(copy, reports / "first.json"), env=env)
        (scoring,) = (cache / "agent_gate").glob("*/scoring")
        server = Bazel(scoring, lane=lane)
        _check_score(reports / "first.json", scoring)
        if plan.warmup:
            server(*baseline)
        ctx.log(f"score: {plan.score_reps} reps of a second score vs the runs alone")
        ours_s: list[float] = []
        theirs_s: list[float] = []
        own_s: list[float] = []
        base_log = b""  # the last baseline's console output
        for rep in range(plan.score_reps):
            sides = ("score", "baseline") if rep % 2 == 0 else ("baseline", "score")
            for side in sides:
                if side == "score":
                    report = reports / f"score-{rep}.json"
                    seconds, _ = timed(_score_argv(copy, report), env=env)
                    own_s.append(_check_score(report, scoring))
                    ours_s.append(seconds)
                else:
                    since = time.time()
                    seconds, result_base = server(*baseline)
                    base_log = result_base.stderr + result_base.stdout
                    _check_baseline(base_log, scoring, since)
                    theirs_s.append(seconds)
        ctx.log("score: one more score without --quiet, for its timing line")
        shown, result = timed(_score_argv(copy, reports / "timing.json", quiet=False), env=env)
        _check_score(reports / "timing.json", scoring)
        timing = parse_timing(result.stderr.decode(errors="replace"))
        logs = scoring.parent / "runs" / _run_id(reports / "timing.json")
        catalog_bazel = bazel_elapsed((logs / "catalog.log").read_text(errors="replace"))
        gate_bazel = bazel_elapsed((logs / "bazel.log").read_text(errors="replace"))
        base_bazel = bazel_elapsed(base_log.decode(errors="replace"))
    finally:
        if scoring.is_dir():
            _shutdown_and_remove(server)
        ctx.discard(scratch)
        shutil.rmtree(cache, ignore_errors=True)

    ours, theirs = Series(tuple(ours_s)), Series(tuple(theirs_s))
    section.checks.append(
        Check(
            "second score: agent-gate score / runs_per_test=2 alone" + lane.suffix,
            ratio(ours, theirs),
            GOAL,
        )
    )
    table = Table(
        [
            "agent-gate score (warm)",
            "runs_per_test=2 alone",
            "ratio (range)",
            "goal",
            "runs' own time, sum",
            "first score (cold)",
        ]
    )
    table.rows.append(
        [
            ours.show(),
            theirs.show(),
            ratio_spread(ours, theirs),
            f"<= {GOAL}",
            Series(tuple(own_s)).show(),
            f"{first:.3f} s",
        ]
    )
    section.tables.append(("Wall time of the command, median (min-max)", table))
    breakdown = Table(["step", "seconds", "share of the score"])
    for name, seconds in timing.items():
        breakdown.rows.append([name, f"{seconds:.1f}", f"{seconds / shown:.0%}"])
    outside = shown - timing.get("total", shown)
    breakdown.rows.append(["outside the timed steps (CLI start-up, exit)", f"{outside:.1f}", ""])
    breakdown.rows.append(["wall time of this score", f"{shown:.1f}", "100%"])
    section.tables.append(
        (
            "Where a second score's time goes (the CLI's `timing:` line of one more score, "
            "without --quiet; `property runs` is inside `gate`)",
            breakdown,
        )
    )
    bazel_table = Table(
        [
            "Bazel command",
            "Bazel's elapsed time",
            "critical path",
            "analysis cache discarded",
            "CLI step around it",
        ]
    )
    for name, (elapsed, critical, discarded), step in (
        (
            "catalog: `bazel build --output_groups=agent_gate_config //:agent_gate`",
            catalog_bazel,
            timing.get("catalog"),
        ),
        ("gate: `bazel test //:agent_gate` (the catalog's flags)", gate_bazel, timing.get("gate")),
        ("alternative: `bazel test --runs_per_test=2` (last rep)", base_bazel, None),
    ):
        bazel_table.rows.append(
            [
                name,
                f"{elapsed:.3f} s",
                f"{critical:.2f} s",
                "yes" if discarded else "no",
                f"{step:.1f} s" if step is not None else "",
            ]
        )
    section.tables.append(
        (
            "Bazel's side of the same score (`INFO: Elapsed time` of each command's console log; "
            "the CLI step adds the bazel client, `bazel info` and reading the outputs)",
            bazel_table,
        )
    )
    section.commands = [
        "tools/agent-gate score --patch examples/patches/promote_refactor.patch "
        "--workspace COPY --quiet --report OUT.json",
        "bazel test --runs_per_test=2 --nocache_test_results "
        + " ".join(f"//:{property_id}" for property_id in MATCHED)
        + "    # in the scoring worktree, $XDG_CACHE_HOME/agent_gate/monorepo-<hash>/scoring",
    ]
    section.method = [
        "COPY: a git repository holding examples/monorepo, its `local_repository(agent_gate)` "
        f"pointed at `{ROOT}`; one untimed score first creates the scoring worktree and "
        "starts its Bazel server" + (", and one untimed baseline run." if plan.warmup else "."),
        f"{plan.score_reps} repetitions, order alternating; both sides use the scoring "
        "worktree's one warm server (the alternative's flags differ from the gate's, so each "
        "side's analysis cache is discarded by the other, as it would be for a user running "
        "both). Every score must promote with exactly "
        + ", ".join(MATCHED)
        + " matched and run twice under its run id; every baseline must run each of them twice.",
        "A second score resets and cleans the worktree, reads the catalog (`bazel build "
        "--output_groups=agent_gate_config //:agent_gate` under the gate's coming flags: a "
        "fresh run id is a new configuration, so Bazel 4.2.3 re-analyses here), checks the "
        "fixture seals, applies the patch and runs `bazel test //:agent_gate` with the same "
        "flags (incremental analysis), then reads `bazel info bazel-testlogs` and writes the "
        "report.",
    ]
    section.notes.append(
        f"Median runs' own time {statistics.median(own_s):.2f} s per score "
        "(both runs of every matched property, as the runner timed them)."
    )
    return section
