"""The CLI's own re-derivation of a gate verdict, before it lets `score` exit 0.

The report comes out of a Bazel test the patch could try to subvert. Everything
the decision depends on the CLI also has itself: the catalog it read at the base,
the touched paths, the ledger rows it read, the fixture seals it computed, the
commit counts, the override, and the double runs' results in
`bazel-bin/agent_gate.runs/<id>.result.txtpb` (written by the gate's own runner
actions, checked to carry this run id). `check` runs `quorum.evaluate` on them
and compares the result with the report: the decision, and every row's match,
vote, classification and exit codes. Any contradiction raises CliError naming
it; a promote stands only when both agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from agent_gate.cli import catalog, double_run
from agent_gate.core import pathdigest, quorum
from agent_gate.core.locality import LocalityIndex
from agent_gate.drive.exit_codes import CliError
from agent_gate.formats import run_result
from proto import agent_gate_pb2


def gate_inputs(
    cat: catalog.Catalog,
    *,
    changed_paths: Sequence[str],
    outcomes: Mapping[str, quorum.RunOutcome],
    seals: Sequence[quorum.FixtureSeal],
    rows: Sequence[quorum.LedgerRow],
    commit_counts: Mapping[str, int],
    override: quorum.Override | None,
    run_id: str,
    build_broken: Mapping[str, str] | None = None,
) -> quorum.GateInputs:
    """The quorum's inputs from what the CLI itself read (one mapping for every caller)."""
    return quorum.GateInputs(
        catalog=cat.properties,
        changed_paths=tuple(changed_paths),
        outcomes=dict(outcomes),
        fixtures=tuple(seals),
        ledger=tuple(rows),
        commit_counts=dict(commit_counts),
        debt_cap=cat.debt_cap,
        ledger_path=cat.ledger_path,
        gate_package=cat.gate_package,
        rule_set_paths=cat.rule_set_paths,
        override=override,
        run_id=run_id,
        unobserved_ok=cat.unobserved_ok,
        unsandboxed=cat.unsandboxed,
        changed_paths_sha256=pathdigest.changed_paths_digest(changed_paths),
        build_broken=dict(build_broken or {}),
    )


def run_outcomes(
    results: Path, property_ids: Sequence[str], run_id: str
) -> dict[str, quorum.RunOutcome]:
    """The two runs of each property, from its result file of this run id (CliError if not)."""
    return {
        property_id: run_result.outcome(
            double_run.read_result(results / f"{property_id}.result.txtpb", property_id, run_id)
        )
        for property_id in property_ids
    }


def _row_facts(row: agent_gate_pb2.Row) -> tuple[object, ...]:
    return (row.matched, row.vote, row.classification, tuple(row.exit_codes))


def contradictions(
    expected: agent_gate_pb2.GateReport, reported: agent_gate_pb2.GateReport
) -> list[str]:
    """Where the report differs from the CLI's own evaluation, in words (empty: none)."""
    found: list[str] = []
    if expected.decision != reported.decision:
        found.append(
            f"the report decides {reported.decision!r}, the CLI's own evaluation "
            f"{expected.decision!r} ({expected.rule})"
        )
    mine = {row.property_id: row for row in expected.rows}
    theirs = {row.property_id: row for row in reported.rows}
    for property_id in sorted(set(mine) | set(theirs)):
        if property_id not in theirs:
            found.append(f"the report has no row for {property_id}")
        elif property_id not in mine:
            found.append(f"the report has a row for {property_id}, which is not in the catalog")
        elif _row_facts(mine[property_id]) != _row_facts(theirs[property_id]):
            want, got = _row_facts(mine[property_id]), _row_facts(theirs[property_id])
            found.append(
                f"row {property_id}: the report says matched/vote/classification/exits {got}, "
                f"the run results say {want}"
            )
    return found


def check(
    cat: catalog.Catalog,
    reported: agent_gate_pb2.GateReport,
    *,
    results: Path,
    changed_paths: Sequence[str],
    seals: Sequence[quorum.FixtureSeal],
    rows: Sequence[quorum.LedgerRow],
    commit_counts: Mapping[str, int],
    override: quorum.Override | None,
    run_id: str,
) -> agent_gate_pb2.GateReport:
    """The CLI's own report; CliError naming every contradiction with `reported`."""
    # The report's matched rows and the CLI's own match: a row the report calls
    # unmatched still needs its runs when the touched paths match it.
    try:
        ours = LocalityIndex((spec.id, spec.locality) for spec in cat.properties).match(
            changed_paths
        )
    except ValueError as error:
        raise CliError(f"cannot match the touched paths to the catalog: {error}") from None
    ran = [row.property_id for row in reported.rows if row.matched]
    ran += [property_id for property_id in ours if property_id not in ran]
    # The gate never builds a test whose closure would run unsandboxed: no runs to read.
    ran = [property_id for property_id in ran if property_id not in cat.unsandboxed]
    try:
        outcomes = run_outcomes(results, ran, run_id)
    except CliError as error:
        raise CliError(
            f"the gate's report cannot be checked against the runs it names ({error}); "
            "nothing is promoted"
        ) from None
    try:
        inputs = gate_inputs(
            cat,
            changed_paths=changed_paths,
            outcomes=outcomes,
            seals=seals,
            rows=rows,
            commit_counts=commit_counts,
            override=override,
            run_id=run_id,
        )
        expected = quorum.evaluate(inputs)
    except (ValueError, UnicodeError) as error:
        raise CliError(f"the CLI cannot evaluate these inputs itself ({error})") from None
    found = contradictions(expected, reported)
    if found:
        raise CliError(
            "the gate's report contradicts the CLI's own evaluation of the same inputs, so it "
            "was not written by this rule set's evaluator from them; nothing is promoted "
            "(fail closed):\n  " + "\n  ".join(found)
        )
    return expected
