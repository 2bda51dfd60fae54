"""Runs agent_gate's benchmarks beside what a user would do instead, and writes RESULTS.md.

    bench/run                                  # everything at full size: bench/RESULTS.md
    bench/run --only seal,evaluator            # some of them (results go to the temp dir)
    bench/run --scale 0.0001 --reps 1 --out /tmp/smoke.md    # the smoke run CI does

Each benchmark is one function `bench(ctx) -> Section` in BENCHMARKS; adding one
is one more module and one more entry. Every figure is a ratio of two things measured side
by side in the same run, because these machines are noisy.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import analysis_bench
import evaluator_bench
import gate_bench
import score_bench
import seal_bench
from harness import (
    BAZEL_4,
    BAZEL_7,
    ROOT,
    BenchError,
    Context,
    Plan,
    Section,
    Table,
    load_average,
    machine_facts,
)

BENCHMARKS: dict[str, Callable[[Context], Section]] = {
    "seal": seal_bench.bench,
    "gate": gate_bench.bench,
    "evaluator": evaluator_bench.bench,
    "analysis": analysis_bench.bench,
    "score": score_bench.bench,
    # The same two on the Bazel 7.7.1 lane (tools/bazel7, bzlmod).
    "gate7": lambda ctx: gate_bench.bench(ctx, BAZEL_7),
    "score7": lambda ctx: score_bench.bench(ctx, BAZEL_7),
}
# Benchmarks run on both lanes: (4.2.3 section key, 7.7.1 section key).
BOTH_LANES = (("gate", "gate7"), ("score", "score7"))

# Benchmarks that are not measured yet, and why: listed, never faked.
NOT_MEASURED: tuple[tuple[str, str], ...] = ()

DEFAULT_OUT = ROOT / "bench" / "RESULTS.md"
PARTIAL_OUT = (
    "agent_gate-bench-RESULTS.md"  # in the temp dir: a partial run never replaces RESULTS.md
)


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiplies every size (default 1: 2 GiB seal tree, N = 1/8/64, 10k x 100k "
        "evaluator, 1k/5k analysis targets); 0.0001 is the smoke run",
    )
    parser.add_argument(
        "--reps",
        type=int,
        default=None,
        help="repetitions of every measurement (default: per benchmark)",
    )
    parser.add_argument(
        "--only", default="", help=f"comma-separated subset of: {', '.join(BENCHMARKS)}"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"results file (default: {DEFAULT_OUT.relative_to(ROOT)} for a full run, "
        f"else {PARTIAL_OUT} in the temp dir)",
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="scratch directory (default: a new one in /tmp)"
    )
    parser.add_argument("--keep", action="store_true", help="keep generated trees and workspaces")
    return parser.parse_args(argv)


def _selected(only: str) -> list[str]:
    if not only:
        return list(BENCHMARKS)
    names = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        raise SystemExit(
            f"bench/run: unknown benchmark {', '.join(unknown)}; pick from {', '.join(BENCHMARKS)}"
        )
    return names


def _section_markdown(section: Section) -> list[str]:
    lines = [f"## {section.title}", ""]
    if section.checks:
        checks = Table(["figure", "measured", "goal", "met"])
        for check in section.checks:
            checks.rows.append(
                [
                    check.name,
                    check.value_text(),
                    check.goal_text(),
                    "yes" if check.met else "**no**",
                ]
            )
        lines += [checks.markdown(), ""]
    for caption, table in section.tables:
        lines += [f"{caption}:", "", table.markdown(), ""]
    if section.commands:
        lines += ["Commands compared:", "", "```", *section.commands, "```", ""]
    if section.method:
        lines += ["How:", ""] + [f"* {line}" for line in section.method] + [""]
    if section.notes:
        lines += [f"* {note}" for note in section.notes] + [""]
    lines += [f"This benchmark took {section.seconds:.0f} s, setup included.", ""]
    return lines


def _side_by_side(sections: Sequence[Section]) -> list[str]:
    """The figures measured on both Bazel lanes, one row each: 4.2.3 beside 7.7.1."""
    by_key = {section.key: section for section in sections}
    table = Table(["figure", f"Bazel {BAZEL_4.version}", f"Bazel {BAZEL_7.version}", "goal"])
    for old, new in BOTH_LANES:
        if old not in by_key or new not in by_key:
            continue
        later = {check.name: check for check in by_key[new].checks}
        for check in by_key[old].checks:
            other = later.get(check.name + BAZEL_7.suffix)
            if other is None:
                continue
            table.rows.append(
                [check.name, check.value_text(), other.value_text(), check.goal_text()]
            )
    if not table.rows:
        return []
    return [
        "## Both Bazel versions side by side",
        "",
        f"The same benchmarks in the same run, on Debian's Bazel {BAZEL_4.version} "
        f"(WORKSPACE) and on the Bazel {BAZEL_7.version} lane (tools/bazel7: bzlmod, the "
        "defaults Bazel 8 and 9 flipped); sections 2b and 5b have the details.",
        "",
        table.markdown(),
        "",
    ]


def render(
    sections: Sequence[Section],
    *,
    command: str,
    plan: Plan,
    started: float,
    seconds: float,
    load_before: str,
    load_after: str,
) -> str:
    """RESULTS.md: summary of every check against its goal, then each benchmark."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started))
    lines = [
        "# agent_gate benchmarks: results",
        "",
        "Generated by `bench/run` (see [README.md](README.md) for what each benchmark "
        "measures and what the figures mean). Do not edit by hand.",
        "",
        f"* Command: `{command}` (scale {plan.scale:g})",
        f"* Run: {when}, took {seconds / 60:.1f} min",
        f"* Load average (1/5/15 min) before: {load_before}; after: {load_after}",
        "",
        "## Summary: every ratio against its goal",
        "",
    ]
    summary = Table(["figure", "measured", "goal", "met"])
    for section in sections:
        for check in section.checks:
            summary.rows.append(
                [
                    check.name,
                    check.value_text(),
                    check.goal_text(),
                    "yes" if check.met else "**no**",
                ]
            )
    lines += [summary.markdown(), ""]
    lines += _side_by_side(sections)
    missing = [section.title for section in sections if not section.checks]
    if missing:
        lines += [f"No figures (failed, see below): {', '.join(missing)}.", ""]
    facts = Table(["machine", ""])
    facts.rows.extend([name, value] for name, value in machine_facts())
    lines += ["## Machine", "", facts.markdown(), ""]
    for section in sections:
        lines += _section_markdown(section)
    if NOT_MEASURED:
        lines += ["## Not measured", ""]
        lines += [f"* **{title}**: {why}" for title, why in NOT_MEASURED]
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    args = _arguments(argv)
    plan = Plan.for_scale(args.scale, args.reps)
    names = _selected(args.only)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="agent_gate-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    full = not args.only and args.scale == 1.0 and args.reps is None
    out = args.out or (DEFAULT_OUT if full else Path(tempfile.gettempdir()) / PARTIAL_OUT)
    command = shlex.join(["bench/run", *argv])
    ctx = Context(plan=plan, workdir=workdir, keep=args.keep)
    started = time.time()
    load_before = load_average()
    sections: list[Section] = []
    failed = 0
    try:
        for name in names:
            ctx.log(f"== {name}")
            began = time.perf_counter()
            try:
                section = BENCHMARKS[name](ctx)
            except BenchError as error:
                failed += 1
                section = Section(key=name, title=f"{name}: FAILED")
                section.notes.append(
                    "The benchmark could not measure: " + str(error).replace("\n", " ")
                )
                ctx.log(f"{name} failed: {error}")
            except Exception:  # a harness bug: report it, still write the other results
                failed += 1
                section = Section(key=name, title=f"{name}: CRASHED")
                section.notes.append("```\n" + traceback.format_exc() + "```")
                ctx.log(traceback.format_exc())
            section.seconds = time.perf_counter() - began
            sections.append(section)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    seconds = time.time() - started
    text = render(
        sections,
        command=command,
        plan=plan,
        started=started,
        seconds=seconds,
        load_before=load_before,
        load_after=load_average(),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    ctx.log(f"wrote {out} ({seconds / 60:.1f} min)")
    for section in sections:
        for check in section.checks:
            mark = "ok  " if check.met else "MISS"
            print(f"{mark} {check.name}: {check.value_text()} (goal {check.goal_text()})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
