"""A double run as the text-format `RunResult` the gate's evaluator reads.

Kept apart from runner.py: protobuf's imports cost a PropertyDoubleRun action
about 40 ms, which run_property_main.py overlaps with the first run.
"""

from __future__ import annotations

import dataclasses

from google.protobuf import text_format

from agent_gate import runner
from proto import agent_gate_pb2


def to_proto(double_run: runner.DoubleRun) -> agent_gate_pb2.RunResult:
    spec = double_run.spec
    return agent_gate_pb2.RunResult(
        property_id=spec.property_id,
        label=spec.label,
        run_id=spec.run_id,
        timeout_seconds=spec.timeout_seconds,
        runs=[agent_gate_pb2.Run(**dataclasses.asdict(run)) for run in double_run.runs],
        classification=double_run.classification,
    )


def to_text(double_run: runner.DoubleRun) -> str:
    return text_format.MessageToString(to_proto(double_run))
