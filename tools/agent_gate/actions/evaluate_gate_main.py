"""The `agent_gate` test: evaluate the quorum and write the reports.

Exit 0 only for promote. The log begins with the decision and the rule that
produced it; the JSON, text-proto and Markdown reports go to
TEST_UNDECLARED_OUTPUTS_DIR and the JUnit XML to XML_OUTPUT_FILE.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from runfiles import runfiles

from agent_gate.actions import evaluator_inputs
from agent_gate.core import promote_check, quorum
from agent_gate.formats import evidence, gate_config, report
from proto import agent_gate_pb2


def _resolver() -> evaluator_inputs.Resolve:
    files = runfiles.Create()

    # The rule writes canonical paths (`<canonical repo>/<path>`), which no apparent
    # name maps: the main repository's mapping leaves them as they are. Unnamed, the
    # library would look for this module's file below runfiles, and it is in an archive.
    def resolve(rlocation: str) -> Path | None:
        path = files.Rlocation(rlocation, source_repo="") if files else None
        return Path(path) if path and os.path.exists(path) else None

    return resolve


def _evidence_lines(result: agent_gate_pb2.GateReport) -> list[str]:
    """Each failing, split or timed-out run's evidence, for the test log."""
    lines: list[str] = []
    for row in result.rows:
        for run in row.evidence:
            lines.append(f"--- {row.property_id}, {evidence.describe(run)} ---")
            if run.output_bytes_omitted:
                lines.append(f"[... {run.output_bytes_omitted} earlier bytes]")
            lines.extend(run.output_tail.splitlines())
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="runfiles path of the gate config")
    args = parser.parse_args(argv)
    resolve = _resolver()
    config = resolve(args.config)
    if config is None:
        print(f"agent_gate: review (fail closed): config {args.config} is not in runfiles")
        return 1
    try:
        loaded = evaluator_inputs.load_file(config, resolve)
    except (gate_config.ConfigError, OSError) as error:
        print(
            f"agent_gate: review (fail closed): the gate config {args.config} cannot be read "
            f"({error}); the rule set and the evaluator come from different agent_gate versions"
        )
        return 1
    result = quorum.evaluate(loaded.inputs)
    result.runs_fresh = loaded.runs_fresh
    evidence.attach(result, loaded.results, loaded.logs, loaded.log_names)
    contradictions = promote_check.promote_problems(result)
    if contradictions:
        # Never expected: the evaluator's own promote contradicts its rows. Fail closed.
        result.errors.extend(f"the promote contradicts its report: {c}" for c in contradictions)
        result.decision = "review"
        result.rule = "review: the gate's promote contradicted its own report; a human must look"
        result.reasons.insert(0, result.rule)

    print("\n".join(report.summary_lines(result)), flush=True)
    tails = _evidence_lines(result)
    if tails:
        print("\n".join(tails))

    out_dir = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
    xml = os.environ.get("XML_OUTPUT_FILE")
    try:
        report.write_all(
            result,
            Path(out_dir) if out_dir else Path.cwd(),
            Path(xml) if xml else None,
        )
    except OSError as error:
        print(f"agent_gate: could not write the report ({error}); not a promote")
        return 1
    return 0 if result.decision == "promote" and not result.errors else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
