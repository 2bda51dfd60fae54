"""`agent-gate`: the merge-queue CLI of agent_gate (docs/merge-queue.md).

    agent-gate score --patch FILE [--base REV] [--workspace DIR] [--report OUT.json]
                     [--quiet] [--override-ignore ID,ID --override-by NAME]
    agent-gate freeze open PROPERTY --reason R [--owner O] [--budget N]
    agent-gate freeze retire PROPERTY
    agent-gate freeze list
    agent-gate admit PROPERTY --mutant PATCH | admit --all-declared
    agent-gate catalog [--format yaml|json]
    agent-gate seal DIR

Exit codes: 0 promote, 10 reject, 11 hold, 12 review, 13 fixture_fault,
14 stop_queue, 2 usage or configuration error (fail closed); `admit` exits 1
when the property does not earn its vote. This module only parses arguments and
dispatches; each command lives in its own module.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agent_gate.drive import deadline, protogen, worktree
from agent_gate.drive.exit_codes import CliError
from agent_gate.formats.terminal import terminal_safe

_DESCRIPTION = "Score agent patches for a merge queue, and manage the freeze ledger."
_EPILOG = (
    "exit codes: 0 promote, 10 reject, 11 hold, 12 review, 13 fixture_fault, 14 stop_queue, "
    "2 usage or configuration error (fail closed); admit: 0 admitted, 1 not admitted"
)


# The ledger stores budgets as int64 (proto field retire_by_commit_count).
MAX_BUDGET = 2**63 - 1


def _text(value: str) -> str:
    """A text argument: refused before anything runs when no file or flag could hold it."""
    if "\0" in value:
        raise argparse.ArgumentTypeError("it contains a NUL byte")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{value!r} is not valid UTF-8") from None
    return value


def _ids(value: str) -> list[str]:
    return [item.strip() for item in _text(value).split(",") if item.strip()]


def _budget(value: str) -> int:
    try:
        number = int(value, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of commits") from None
    if not 0 <= number <= MAX_BUDGET:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and {MAX_BUDGET} commits")
    return number


def _kept_runs(value: str) -> int:
    try:
        number = int(value, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(
            f"{value} keeps no run: a score needs its own run folder (its logs), so N >= 1"
        )
    return number


def _deadline(value: str) -> float:
    try:
        return deadline.parse_seconds(value, "--deadline")
    except CliError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _workspace_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace",
        type=Path,
        default=None,
        help="the Bazel workspace in a git checkout (default: the one holding the current dir)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument(
        "--deadline",
        type=_deadline,
        default=None,
        metavar="SECONDS",
        help="stop and fail closed after this long (default: $AGENT_GATE_DEADLINE_SECONDS, "
        "else 7200)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-gate",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    score = commands.add_parser("score", help="score one patch: decision and exit code")
    score.add_argument("--patch", type=Path, required=True, help="the candidate `git diff`")
    score.add_argument(
        "--base", type=_text, default="HEAD", help="revision to apply it to (default HEAD)"
    )
    score.add_argument(
        "--report",
        type=Path,
        default=None,
        help="write OUT.json, OUT.md and OUT.xml (JUnit); an existing directory gets RUN_ID.json",
    )
    score.add_argument(
        "--override-ignore",
        type=_ids,
        default=[],
        metavar="ID[,ID]",
        help="stop_queue override: open ledger rows left out of the debt",
    )
    score.add_argument(
        "--override-by", type=_text, default=None, metavar="NAME", help="who overrides"
    )
    score.add_argument(
        "--keep-runs",
        type=_kept_runs,
        default=worktree.DEFAULT_KEPT_RUNS,
        metavar="N",
        help="run log folders (<state dir>/runs/) a score leaves, its own included "
        f"(default {worktree.DEFAULT_KEPT_RUNS})",
    )
    _workspace_option(score)

    freeze = commands.add_parser("freeze", help="open, retire or list freeze ledger rows")
    actions = freeze.add_subparsers(dest="action", required=True, metavar="ACTION")
    opening = actions.add_parser("open", help="freeze a property that splits on the clean tree")
    opening.add_argument("property", type=_text, metavar="PROPERTY")
    opening.add_argument("--reason", type=_text, required=True)
    opening.add_argument("--owner", type=_text, default="unassigned")
    opening.add_argument("--budget", type=_budget, default=30, help="commits before it is spent")
    _workspace_option(opening)
    retire = actions.add_parser("retire", help="mark a property's open row retired")
    retire.add_argument("property", type=_text, metavar="PROPERTY")
    _workspace_option(retire)
    listing = actions.add_parser("list", help="the rows, commits spent against budget, debt")
    _workspace_option(listing)

    admit = commands.add_parser("admit", help="check a property passes clean, fails mutated")
    admit.add_argument("property", metavar="PROPERTY", nargs="?")
    admit.add_argument("--mutant", type=Path, default=None, help="a patch deleting the invariant")
    admit.add_argument(
        "--all-declared", action="store_true", help="check every declared admission_mutants"
    )
    admit.add_argument("--base", default="HEAD", help="revision to check at (default HEAD)")
    _workspace_option(admit)

    cat = commands.add_parser("catalog", help="the catalog, read from the build graph")
    cat.add_argument("--format", choices=("yaml", "json"), default="yaml")
    cat.add_argument("--base", default="HEAD", help="revision to read it at (default HEAD)")
    _workspace_option(cat)

    seal = commands.add_parser("seal", help="the seal of a fixture tree, as coreutils prints it")
    seal.add_argument("dir", metavar="DIR", help="the tree, relative to --repo-root")
    seal.add_argument("--repo-root", type=Path, default=None, help="default: current directory")
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    # Imported here: the proto module must be importable first (protogen).
    from agent_gate.cli import admit, catalog, freeze, score  # noqa: PLC0415
    from agent_gate.drive.progress import Progress  # noqa: PLC0415
    from agent_gate.formats import seal  # noqa: PLC0415

    out = sys.stdout
    if args.command == "seal":
        root = args.repo_root if args.repo_root is not None else Path.cwd()
        out.write(seal.seal_line(seal.seal_tree(root, args.dir)))
        return 0
    deadline.start(args.deadline)
    progress = Progress(quiet=args.quiet)
    if args.command == "score":
        options = score.ScoreOptions(
            patch=args.patch,
            base=args.base,
            workspace=args.workspace,
            report=args.report,
            override_ignore=tuple(args.override_ignore),
            override_by=args.override_by,
            keep_runs=args.keep_runs,
        )
        return score.score(options, progress, out)
    if args.command == "catalog":
        return catalog.show(args.workspace, args.base, args.format, progress, out)
    if args.command == "admit":
        return admit.admit(
            args.workspace,
            args.property,
            args.mutant,
            all_declared=args.all_declared,
            base=args.base,
            progress=progress,
            out=out,
        )
    if args.action == "open":
        return freeze.freeze_open(
            args.workspace,
            args.property,
            reason=args.reason,
            owner=args.owner,
            budget=args.budget,
            progress=progress,
            out=out,
        )
    if args.action == "retire":
        return freeze.freeze_retire(args.workspace, args.property, progress, out)
    return freeze.freeze_list(args.workspace, progress, out)


def main(argv: Sequence[str] | None = None) -> int:
    # File names may hold any byte: print them escaped rather than fail on them.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    try:
        protogen.ensure_proto_importable()
    except protogen.ProtoGenError as error:
        print(f"agent-gate: error: {error}", file=sys.stderr)
        return 2
    from agent_gate.formats import seal  # noqa: PLC0415

    try:
        return _dispatch(args)
    except CliError as error:
        # Paths in it come from the patch; its own line breaks stay.
        shown = "\n".join(terminal_safe(line) for line in str(error).split("\n"))
        print(f"agent-gate: error: {shown}", file=sys.stderr)
        return error.code
    except seal.SealError as error:
        print(f"agent-gate: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("agent-gate: interrupted; nothing was decided", file=sys.stderr)
        return 130
    except Exception as error:  # the last line of fail closed: never a traceback, never 0
        if os.environ.get("AGENT_GATE_DEBUG"):
            raise
        print(
            f"agent-gate: error: internal error ({type(error).__name__}: {error}); nothing was "
            "decided (fail closed). Set AGENT_GATE_DEBUG=1 for the traceback and report it",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
