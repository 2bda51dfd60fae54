"""What a promote must look like, checked on the report itself.

The evaluator decides; this module re-reads what it wrote. A report whose decision
is `promote` while any of its rows, reasons or lists says otherwise is a
contradiction: whoever wrote it (a bug, or a patch that reached the report), it
is not trusted. The evaluator's exit code and the CLI both apply it.
"""

from __future__ import annotations

from proto import agent_gate_pb2


def promote_problems(report: agent_gate_pb2.GateReport) -> list[str]:
    """Every way a promote report contradicts itself; empty when it does not, or is no promote."""
    if report.decision != "promote":
        return []
    problems: list[str] = []
    if report.errors:
        problems.append(f"it lists {len(report.errors)} configuration error(s)")
    for name in ("guarded_paths", "unobserved_paths", "unsandboxed_targets"):
        if getattr(report, name):
            problems.append(f"it lists {name.replace('_', ' ')}")
    other = [reason for reason in report.reasons if not reason.startswith("promote:")]
    if other or not report.reasons or report.rule != report.reasons[0]:
        problems.append("its reasons name a rule other than promote")
    if report.debt > report.debt_cap:
        problems.append(f"its debt {report.debt} exceeds the cap {report.debt_cap}")
    for tree in report.fixtures:
        if tree.status != "match":
            problems.append(f"fixture tree {tree.root} is {tree.status or 'unknown'}")
    voters = 0
    for row in report.rows:
        if not row.matched or row.vote == "excluded":
            continue
        if row.classification != "pass" or list(row.exit_codes) != [0, 0]:
            problems.append(
                f"matched {row.strength} property {row.property_id} is {row.classification} "
                f"(exit codes {list(row.exit_codes)})"
            )
        if row.strength == "strong" and row.vote == "yes":
            voters += 1
        elif row.strength == "strong":
            problems.append(f"matched strong property {row.property_id} voted {row.vote!r}")
        if row.seal_status not in ("match", "none"):
            problems.append(f"matched property {row.property_id} saw seal {row.seal_status}")
    if voters == 0:
        problems.append("no strong property voted yes: the quorum is empty")
    return problems
