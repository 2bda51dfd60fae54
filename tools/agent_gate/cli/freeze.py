"""`agent-gate freeze open|retire|list`: the human workflow around the freeze ledger.

A row is opened only after the property splits on the **unmodified** tree (a
clean scoring worktree at HEAD) with its fixtures matching their committed
seals; never for a pass, a stable failure or a drifted seal, and never on top
of an open row (a freeze is not extended). Rows are written to the ledger file
of the user's checkout with `ledger.append_row` / `ledger.set_state`, which
keep every comment and the row order and replace the file atomically; the edit
is then committed in a reviewed change like any other.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from agent_gate.cli import catalog, double_run
from agent_gate.drive import bazel_client, gate_target, sealcheck, worktree
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.progress import Progress
from agent_gate.formats import ledger
from proto import agent_gate_pb2

DEFAULT_BUDGET = 30
DEFAULT_OWNER = "unassigned"


@dataclass(frozen=True)
class Checkout:
    """The user's repository, HEAD, and the catalog read at HEAD in the scoring worktree."""

    repo: worktree.Repo
    head: str
    workspace: Path  # the scoring workspace, clean at HEAD
    catalog: catalog.Catalog
    log_dir: Path

    @property
    def ledger_path(self) -> Path:
        """The ledger file of the user's checkout (what the edit goes into)."""
        return self.repo.workspace / self.catalog.ledger_path


@contextmanager
def checkout_at_head(workspace: Path | None, progress: Progress) -> Iterator[Checkout]:
    """Lock the repository, reset the scoring worktree to HEAD, read the catalog there."""
    bazel_client.bazel_binary()
    repo = worktree.open_repo(workspace)
    head = worktree.resolve_rev(repo, "HEAD")
    log_dir = repo.state_dir / "runs" / gate_target.new_run_id("freeze")
    with worktree.locked(repo, progress):
        scoring = worktree.prepare(repo, head, progress)
        cat = catalog.build(scoring, progress, log_dir, worktree.describe(repo, head))
        yield Checkout(repo, head, scoring, cat, log_dir)


def load(path: Path, known_ids: Sequence[str] | None) -> agent_gate_pb2.Ledger:
    try:
        return ledger.load_ledger(path, known_ids=known_ids)
    except ledger.LedgerError as error:
        raise CliError(f"the ledger cannot be used; fix it first:\n{error}") from None


def open_row_line(path: Path, rows: agent_gate_pb2.Ledger, property_id: str) -> int | None:
    """The line of the open row of `property_id`, if it has one."""
    lines = ledger.row_lines(path)
    for index, row in enumerate(rows.freeze):
        if row.property_id == property_id and row.state == "open":
            return lines[index] if index < len(lines) else 1
    return None


def split_verdict(result: agent_gate_pb2.RunResult) -> str | None:
    """Why a double run on the unmodified tree does not justify a freeze; None if it does."""
    kind = double_run.classification(result)
    exits = double_run.exits(result)
    if kind == "pass":
        return (
            f"it passed twice on the unmodified tree ({exits}): there is no split to freeze. "
            "A split seen only with a patch applied belongs to the patch: hold it"
        )
    if kind == "fail":
        return (
            f"it failed twice on the unmodified tree ({exits}): a stable failure is never "
            "frozen; fix the property or the code"
        )
    return None


def make_row(
    property_id: str, *, seal_value: str, reason: str, head: str, budget: int, owner: str
) -> agent_gate_pb2.Freeze:
    return agent_gate_pb2.Freeze(
        property_id=property_id,
        state="open",
        seal=seal_value,
        reason=reason,
        opened_against_commit=head,
        retire_by_commit_count=budget,
        owner=owner,
    )


# The ledger stores a budget as int64 (retire_by_commit_count).
MAX_BUDGET = 2**63 - 1


def freeze_open(
    workspace: Path | None,
    property_id: str,
    *,
    reason: str,
    owner: str,
    budget: int,
    progress: Progress,
    out: TextIO,
) -> int:
    if not reason.strip():
        raise CliError("--reason must say why the property is frozen (what split, on what)")
    if not owner.strip():
        raise CliError("--owner must name who retires the row (default: unassigned)")
    if not 0 <= budget <= MAX_BUDGET:
        raise CliError(f"--budget must be 0 to {MAX_BUDGET} commits (int64), not {budget}")
    with checkout_at_head(workspace, progress) as checkout:
        cat = checkout.catalog
        cat.get(property_id)
        path = checkout.ledger_path
        current = load(path, cat.ids)
        line = open_row_line(path, current, property_id)
        if line is not None:
            raise CliError(
                f"{path}:{line}: {property_id} already has an open freeze; a freeze is never "
                "extended or reopened on top of itself. Retire it first "
                f"(agent-gate freeze retire {property_id}) in a reviewed change"
            )
        trees = cat.fixtures_of(property_id)
        seals = sealcheck.check(checkout.workspace, trees)
        drift = sealcheck.drifted(seals)
        if drift:
            raise CliError(
                f"refusing to freeze {property_id}: its fixtures drifted from their committed "
                f"seals at HEAD ({'; '.join(sealcheck.describe(tree) for tree in drift)}). A "
                "seal mismatch is a fixture fault, never a freeze: restore the fixtures or "
                "re-seal them in a reviewed change"
            )
        results = double_run.run_properties(
            checkout.workspace,
            cat,
            [property_id],
            progress=progress,
            log_dir=checkout.log_dir,
            label="freeze",
        )
        result = results[property_id]
        why = split_verdict(result)
        if why is not None:
            raise CliError(f"refusing to freeze {property_id}: {why}")
        seen = double_run.seen_seal(result)
        if seen is None or (len(seals) == 1 and seen != seals[0].actual):
            raise CliError(
                f"refusing to freeze {property_id}: its two runs did not both see the "
                "committed fixture seal; a freeze needs the split on the same seal"
            )
        # One tree: its seal, as docs/article.md's rows hold it; several: the seal the runs saw.
        seal_value = (seals[0].actual or "") if len(seals) == 1 else seen
        row = make_row(
            property_id,
            seal_value=seal_value,
            reason=reason.strip(),
            head=checkout.head,
            budget=budget,
            owner=owner.strip(),
        )
        try:
            ledger.append_row(path, row, known_ids=cat.ids)
        except ledger.LedgerError as error:
            raise CliError(f"the row was not written:\n{error}") from None
        out.write(ledger.format_row(row))
        out.write(
            f"opened: {property_id} split on the unmodified tree at {checkout.head[:12]} "
            f"({double_run.exits(result)}); row appended to {path}. Commit it in a reviewed "
            "change.\n"
        )
        return 0


def freeze_retire(workspace: Path | None, property_id: str, progress: Progress, out: TextIO) -> int:
    with checkout_at_head(workspace, progress) as checkout:
        path = checkout.ledger_path
        load(path, checkout.catalog.ids)
        try:
            ledger.set_state(path, property_id, "retired", known_ids=checkout.catalog.ids)
        except ledger.LedgerError as error:
            raise CliError(str(error)) from None
        out.write(f"retired: {property_id} in {path}. Commit it in a reviewed change.\n")
        return 0


@dataclass(frozen=True)
class Spent:
    since: int | None  # commits since opened_against_commit; None when unknown
    spent: bool


def spending(row: agent_gate_pb2.Freeze, since: int | None) -> Spent:
    """Whether an open row's budget is spent; an unknown count is spent (fail closed)."""
    if row.state != "open":
        return Spent(since, False)
    return Spent(since, since is None or since >= row.retire_by_commit_count)


def debt(rows: Sequence[agent_gate_pb2.Freeze], counts: Mapping[str, int | None]) -> int:
    """Open rows, plus one more for each whose budget is spent."""
    total = 0
    for row in rows:
        if row.state == "open":
            total += 2 if spending(row, counts.get(row.opened_against_commit)).spent else 1
    return total


def table(
    rows: Sequence[agent_gate_pb2.Freeze], counts: Mapping[str, int | None], cap: int, path: str
) -> list[str]:
    """`freeze list`: one line per row, commits spent against budget, then the debt."""
    header = ("property", "state", "owner", "opened against", "commits/budget", "reason")
    cells: list[tuple[str, ...]] = [header]
    for row in rows:
        state = spending(row, counts.get(row.opened_against_commit))
        spent_text = "unknown" if state.since is None else str(state.since)
        budget = f"{spent_text}/{row.retire_by_commit_count}"
        if state.spent:
            budget += " spent"
        cells.append(
            (
                row.property_id,
                row.state,
                row.owner or "-",
                row.opened_against_commit[:12] or "-",
                budget,
                row.reason,
            )
        )
    widths = [max(len(line[i]) for line in cells) for i in range(len(header) - 1)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False))
        + "  "
        + line[-1]
        for line in cells
    ]
    owed = debt(rows, counts)
    verdict = "over the cap: stop_queue" if owed > cap else "within the cap"
    lines.append(
        f"{path}: {len(rows)} row(s), debt {owed} (open rows + spent budgets), cap {cap}: {verdict}"
    )
    return [line.rstrip() for line in lines]


def freeze_list(workspace: Path | None, progress: Progress, out: TextIO) -> int:
    with checkout_at_head(workspace, progress) as checkout:
        path = checkout.ledger_path
        rows = list(load(path, checkout.catalog.ids).freeze)
        counts: dict[str, int | None] = {}
        for row in rows:
            commit = row.opened_against_commit
            if commit not in counts:
                counts[commit] = worktree.commits_since(checkout.repo, commit, checkout.head)
        shown = checkout.catalog.ledger_path
        out.write("\n".join(table(rows, counts, checkout.catalog.debt_cap, shown)) + "\n")
        return 0
