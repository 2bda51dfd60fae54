"""The scheduled full strong pass: every strong property twice, no locality filter.

Outside the merge button (docs/threat-model.md: path prefixes miss cross-module effects),
it answers one question: does every strong property that is not frozen still pass
twice on sealed fixtures? Its decision words are the gate's, minus the diff-only
ones: no review guards and no stop_queue, since there is no patch to hold back.
"""

from __future__ import annotations

from agent_gate import quorum
from agent_gate.pathdigest import changed_paths_digest
from proto import agent_gate_pb2


def _row(
    spec: quorum.PropertySpec, inputs: quorum.GateInputs, open_ids: set[str]
) -> agent_gate_pb2.Row:
    row = agent_gate_pb2.Row(property_id=spec.id, strength=spec.strength, label=spec.label)
    listed = {r.state for r in inputs.ledger if r.property_id == spec.id}
    row.ledger_state = "open" if "open" in listed else ("retired" if listed else "")
    if spec.strength != "strong":
        row.classification, row.vote, row.note = (
            "not_run",
            "not_voting",
            "weak: not in a full strong pass",
        )
        return row
    row.matched, row.matched_by = True, "(full strong pass)"
    row.seal_status = _seal_status(spec, inputs)
    outcome = inputs.outcomes.get(spec.id)
    if outcome is None:
        row.classification, row.vote, row.note = "error", "no", "no run result"
        return row
    row.exit_codes.extend(outcome.exit_codes)
    row.classification = quorum.classify(outcome)
    if spec.id in open_ids:
        row.vote, row.note = "excluded", "excluded: open freeze; not a pass"
    else:
        row.vote = "yes" if row.classification == "pass" else "no"
    return row


def _seal_status(spec: quorum.PropertySpec, inputs: quorum.GateInputs) -> str:
    """The worst seal status over the property's trees: an unsealed tree is unknown."""
    if not spec.fixture_roots:
        return "none"
    seals = {tree.root: tree for tree in inputs.fixtures}
    states = set()
    for root in spec.fixture_roots:
        tree = seals.get(root)
        if tree is None or tree.expected is None or tree.actual is None:
            states.add("unknown")
        else:
            states.add("match" if tree.expected == tree.actual else "mismatch")
    return "unknown" if "unknown" in states else ("mismatch" if "mismatch" in states else "match")


def evaluate(inputs: quorum.GateInputs) -> agent_gate_pb2.GateReport:
    open_ids = {r.property_id for r in inputs.ledger if r.state == "open"}
    report = agent_gate_pb2.GateReport(
        debt_cap=inputs.debt_cap,
        run_id=inputs.run_id,
        changed_paths_sha256=changed_paths_digest(inputs.changed_paths),
    )
    report.rows.extend(_row(spec, inputs, open_ids) for spec in inputs.catalog)
    report.errors.extend(inputs.errors)
    report.debt = len(open_ids)
    for tree in inputs.fixtures:
        status = "unknown"
        if tree.expected is not None and tree.actual is not None:
            status = "match" if tree.expected == tree.actual else "mismatch"
        report.fixtures.add(
            root=tree.root,
            seal_file=tree.seal_file,
            expected=tree.expected or "",
            actual=tree.actual or "",
            status=status,
        )

    voting = [row for row in report.rows if row.matched and row.vote != "excluded"]
    reasons: list[tuple[str, str]] = []
    mismatched = [f.root for f in report.fixtures if f.status == "mismatch"]
    if mismatched:
        reasons.append(
            ("fixture_fault", f"fixture_fault: {', '.join(mismatched)} no longer match their seals")
        )
    if report.errors or any(row.classification == "error" for row in report.rows):
        reasons.append(("review", "review: configuration errors; see errors"))
    failed = [row.property_id for row in voting if row.classification in ("fail", "error")]
    if failed:
        reasons.append(("reject", f"reject: strong properties failed twice: {', '.join(failed)}"))
    if not voting:
        reasons.append(("reject", "reject: empty quorum: no strong property can vote"))
    flaky = [row.property_id for row in voting if row.classification == "flake"]
    if flaky:
        reasons.append(("hold", f"hold: split runs (flakes): {', '.join(flaky)}"))
    if not reasons:
        reasons.append(
            ("promote", f"promote: all {len(voting)} voting strong properties passed twice")
        )
    reasons.sort(key=lambda reason: quorum.PRECEDENCE.index(reason[0]))
    report.decision, report.rule = reasons[0]
    report.reasons.extend(text for _, text in reasons)
    return report
