"""Why a property did not pass, attached to its report row: the evidence travels with the verdict.

For every matched run that failed, split or timed out, the row gets the exit code
or signal, the duration, the last lines of the run's output (at most TAIL_LINES
lines and TAIL_BYTES bytes) and where the full log is; a split also says what
differed between the two runs. The JSON, Markdown and JUnit views all read it
from the row, so a merge queue that keeps any one of them keeps the reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from proto import agent_gate_pb2

TAIL_LINES = 200
TAIL_BYTES = 64 * 1024
_LINE_CHARS = 2000


def tail(log: Path | None) -> tuple[str, int]:
    """The last lines of a log, read from its end only; and how many bytes they leave out."""
    if log is None:
        return "", 0
    try:
        with log.open("rb") as stream:
            size = stream.seek(0, os.SEEK_END)
            start = max(0, size - TAIL_BYTES)
            stream.seek(start)
            data = stream.read()
    except OSError as error:
        return f"(the log could not be read: {error.strerror or error})", 0
    lines = data.decode("utf-8", errors="replace").splitlines()
    if start > 0 and len(lines) > 1:
        lines = lines[1:]  # the first line was cut by the byte bound; a lone line stays
    kept = lines[-TAIL_LINES:]
    shown = [
        line
        if len(line) <= _LINE_CHARS
        else f"[... cut to its last {_LINE_CHARS} characters] {line[-_LINE_CHARS:]}"
        for line in kept
    ]
    text = "\n".join(shown)
    return text, max(0, size - len(text.encode("utf-8", errors="replace")))


def bounded(text: str) -> tuple[str, int]:
    """The end of `text`, bounded as a run's tail is; and how many bytes it leaves out."""
    data = text.encode("utf-8", errors="replace")
    kept = data[-TAIL_BYTES:].decode("utf-8", errors="replace").splitlines()
    if len(data) > TAIL_BYTES and len(kept) > 1:
        kept = kept[1:]  # cut by the byte bound
    shown = "\n".join(kept[-TAIL_LINES:])
    return shown, max(0, len(data) - len(shown.encode("utf-8", errors="replace")))


# A RunEvidence of run number 0 is the build of the property's test, not a run.
BUILD_RUN_NUMBER = 0


def _exit(run: agent_gate_pb2.Run) -> str:
    if run.timed_out:
        return "timed out"
    if run.exit_code < 0:
        return f"killed by signal {-run.exit_code}"
    return f"exit {run.exit_code}"


def split_summary(result: agent_gate_pb2.RunResult) -> str:
    """What differed between the two runs of a split, in one sentence."""
    first, second = sorted(result.runs, key=lambda run: run.run_number)
    parts = [
        f"run 1 {_exit(first)} after {first.duration_seconds:.2f}s, "
        f"run 2 {_exit(second)} after {second.duration_seconds:.2f}s"
    ]
    if first.output_sha256 and first.output_sha256 != second.output_sha256:
        parts.append("their output differed")
    elif first.output_sha256:
        parts.append("their output was identical")
    if first.fixture_seal_before != second.fixture_seal_before:
        parts.append("they saw different fixture seals")
    return "; ".join(parts)


def attach(
    report: agent_gate_pb2.GateReport,
    results: Mapping[str, agent_gate_pb2.RunResult],
    logs: Mapping[str, Sequence[Path]],
    log_names: Mapping[str, Sequence[str]],
) -> None:
    """Add evidence to every matched row whose runs did not both pass."""
    for row in report.rows:
        result = results.get(row.property_id)
        if not row.matched or result is None or row.classification == "pass":
            continue
        files = list(logs.get(row.property_id, ()))
        names = list(log_names.get(row.property_id, ()))
        for index, run in enumerate(sorted(result.runs, key=lambda run: run.run_number)):
            if run.exit_code == 0 and not run.timed_out:
                continue  # the passing half of a split: its output is not the reason
            text, omitted = tail(files[index] if index < len(files) else None)
            row.evidence.add(
                run_number=run.run_number,
                exit_code=run.exit_code,
                timed_out=run.timed_out,
                duration_seconds=run.duration_seconds,
                output_tail=text,
                output_bytes_omitted=omitted,
                log=names[index] if index < len(names) else "",
            )
        if row.classification == "flake":
            row.split = split_summary(result)


def describe(evidence: agent_gate_pb2.RunEvidence) -> str:
    """`run 2: exit 1 after 0.41s (log bazel-bin/...)`."""
    run = agent_gate_pb2.Run(exit_code=evidence.exit_code, timed_out=evidence.timed_out)
    where = f" (full log: {evidence.log})" if evidence.log else ""
    if evidence.run_number == BUILD_RUN_NUMBER:
        return f"build of its test: bazel build exit {evidence.exit_code}{where}"
    return f"run {evidence.run_number}: {_exit(run)} after {evidence.duration_seconds:.2f}s{where}"
