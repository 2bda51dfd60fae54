"""Scores every example patch of examples/patches/cases.yaml and prints the decision table.

Each case is scored as the merge queue would score it: a copy of
examples/monorepo at its base commit (plus the case's ledger and drift), the
patch applied with `git apply`, the touched paths read from the patch, and
`bazel test //:agent_gate` with them and a fresh run id. The table goes to
stdout, progress to stderr. Exit 0 when every case reached its expected
decision with the row-level facts the manifest names; 1 otherwise; 2 when the
demo cannot run at all (no bazel, a broken manifest).

Run it as `tools/demo` (sets up the environment first) or with the project's
Python: `.venv/bin/python3 examples/demo.py [--case NAME] [--keep] [--verbose]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO_ROOT / "tools"), str(REPO_ROOT / "examples")]

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

import cases  # noqa: E402

from agent_gate.drive import bazel_client, gate_flags  # noqa: E402
from agent_gate.formats import patch  # noqa: E402


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(rows: list[tuple[str, str, str, str, str]]) -> str:
    header = ("case", "patch", "expected", "decision", "rule")
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]
    lines.extend("| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows)
    return "\n".join(lines)


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--case", action="append", default=[], help="score only this case (repeatable)"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="a new directory for the example copy and its Bazel output base "
        "(default: a temporary one, deleted afterwards unless --keep)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work directory for inspection"
    )
    parser.add_argument("--verbose", action="store_true", help="stream bazel's output too")
    parser.add_argument("--bazel", default="bazel", help="the bazel binary (default: bazel)")
    return parser.parse_args(argv)


def _score_all(
    workspace: cases.ExampleWorkspace, selected: list[cases.Case], verbose: bool
) -> tuple[list[tuple[str, str, str, str, str]], list[str], list[float]]:
    rows: list[tuple[str, str, str, str, str]] = []
    failures: list[str] = []
    timings: list[float] = []
    progress = (lambda line: _say(f"      bazel: {line}")) if verbose else None
    for number, case in enumerate(selected, start=1):
        _say(f"[{number}/{len(selected)}] {case.name}: {case.patch} (expect {case.expect})")
        started = time.monotonic()
        try:
            result = workspace.score(case, progress=progress)
        except (cases.CaseError, patch.PatchError, gate_flags.GateInputError) as error:
            timings.append(time.monotonic() - started)
            failures.append(f"{case.name}: {error}")
            rows.append((case.name, case.patch, case.expect, "error", str(error)))
            _say(f"      error: {error}")
            continue
        elapsed = time.monotonic() - started
        timings.append(elapsed)
        problems = cases.check(result)
        decision = result.decision or "none (fail closed)"
        verdict = "as expected" if not problems else "NOT AS EXPECTED"
        _say(
            f"      {decision} in {elapsed:.1f}s ({len(result.touched)} touched paths, "
            f"gate {result.gate_seconds:.1f}s): {verdict}"
        )
        for problem in problems:
            _say(f"      - {problem}")
        failures.extend(f"{case.name}: {problem}" for problem in problems)
        shown = decision if not problems else f"{decision} (MISMATCH)"
        rows.append((case.name, case.patch, case.expect, shown, result.rule))
    return rows, failures, timings


def main(argv: list[str]) -> int:
    args = _arguments(argv)
    try:
        selected = cases.load_cases()
    except cases.CaseError as error:
        _say(f"demo: {error}")
        return 2
    if args.case:
        unknown = sorted(set(args.case) - {case.name for case in selected})
        if unknown:
            _say(f"demo: unknown case(s) {unknown}; cases: {[c.name for c in selected]}")
            return 2
        selected = [case for case in selected if case.name in args.case]

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="agent_gate_demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        workspace = cases.ExampleWorkspace.create(
            workdir / "monorepo", output_base=workdir / "output_base", bazel_binary=args.bazel
        )
    except (bazel_client.BazelNotFoundError, cases.CaseError) as error:
        _say(f"demo: {error}")
        return 2
    _say(f"demo: scoring {len(selected)} cases in {workspace.root}")
    started = time.monotonic()
    try:
        rows, failures, timings = _score_all(workspace, selected, args.verbose)
    finally:
        workspace.shutdown()
        if args.keep:
            _say(f"demo: kept {workdir} (bazel server stopped)")
        else:
            cases.remove_tree(workdir)

    print(_table(rows))
    total = time.monotonic() - started
    warm = timings[1:]
    warm_text = f", later cases {sum(warm) / len(warm):.1f}s on average (warm)" if warm else ""
    first_text = f"first case {timings[0]:.1f}s (cold server)" if timings else "no cases"
    matched = len(selected) - len({failure.split(":", 1)[0] for failure in failures})
    _say(
        f"demo: {matched}/{len(selected)} cases as expected in {total:.1f}s; "
        f"{first_text}{warm_text}"
    )
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
