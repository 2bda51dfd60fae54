"""A double run as the text-format `RunResult` message the gate's evaluator reads.

Written without protobuf: importing it costs a PropertyDoubleRun action about 40 ms
of CPU, paid by every property of a gate. The message is small and fixed, so this
module prints it directly; `tests/unit/formats/run_result_test.py` parses the text with
protobuf's own parser and checks it is the same message, for arbitrary field
values. `read`, the one reader (the evaluator's and the CLI's), parses it with
protobuf, so text it cannot read fails closed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agent_gate.core.outcome import RunOutcome

if TYPE_CHECKING:  # only `read` parses the proto, and imports it when called
    from proto import agent_gate_pb2


# What `to_text` writes: the runner's DoubleRun, described here so that this format
# does not depend on the action that fills it.
class _WrittenSpec(Protocol):
    @property
    def property_id(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def timeout_seconds(self) -> float: ...


class _WrittenRun(Protocol):
    @property
    def run_number(self) -> int: ...
    @property
    def exit_code(self) -> int: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def duration_seconds(self) -> float: ...
    @property
    def output_sha256(self) -> str: ...
    @property
    def fixture_seal_before(self) -> str: ...
    @property
    def fixture_seal_after(self) -> str: ...
    @property
    def isolated(self) -> bool: ...
    @property
    def isolation_error(self) -> str: ...


class _WrittenDoubleRun(Protocol):
    @property
    def spec(self) -> _WrittenSpec: ...
    @property
    def runs(self) -> Sequence[_WrittenRun]: ...
    @property
    def classification(self) -> str: ...
    @property
    def network_blocked(self) -> bool: ...
    @property
    def network_interfaces(self) -> Sequence[str]: ...


def _string(value: str) -> str:
    # Printable ASCII as is, `"` and `\` escaped, every other UTF-8 byte as an octal
    # escape: what the text format reads back as the same string. A lone surrogate
    # (from an undecodable path in an error message) is kept as its escape, e.g. `\udcff`.
    escaped = []
    for byte in value.encode("utf-8", errors="backslashreplace"):
        if byte in b'"\\':
            escaped.append("\\" + chr(byte))
        elif 0x20 <= byte < 0x7F:
            escaped.append(chr(byte))
        else:
            escaped.append(f"\\{byte:03o}")
    return '"' + "".join(escaped) + '"'


def _fields(fields: list[tuple[str, object]], indent: str) -> list[str]:
    lines = []
    for name, value in fields:
        if isinstance(value, bool):  # before int: a bool is an int
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(value)
        elif isinstance(value, float):
            text = repr(value)  # shortest exact spelling; `inf` and `nan` parse too
        else:
            text = _string(str(value))
        lines.append(f"{indent}{name}: {text}")
    return lines


def to_text(double_run: _WrittenDoubleRun) -> str:
    spec = double_run.spec
    lines = _fields(
        [
            ("property_id", spec.property_id),
            ("label", spec.label),
            ("run_id", spec.run_id),
        ],
        "",
    )
    for run in double_run.runs:
        lines.append("runs {")
        lines += _fields(
            [
                ("run_number", run.run_number),
                ("exit_code", run.exit_code),
                ("timed_out", run.timed_out),
                ("duration_seconds", float(run.duration_seconds)),
                ("output_sha256", run.output_sha256),
                ("fixture_seal_before", run.fixture_seal_before),
                ("fixture_seal_after", run.fixture_seal_after),
                ("isolated", run.isolated),
                ("isolation_error", run.isolation_error),
            ],
            "  ",
        )
        lines.append("}")
    lines += _fields(
        [
            ("classification", double_run.classification),
            ("timeout_seconds", float(spec.timeout_seconds)),
            ("network_blocked", double_run.network_blocked),
            *(("network_interfaces", name) for name in double_run.network_interfaces),
        ],
        "",
    )
    return "\n".join(lines) + "\n"


class _ReadRun(Protocol):
    run_number: int
    isolated: bool
    isolation_error: str


class _ReadResult(Protocol):
    @property
    def runs(self) -> Sequence[_ReadRun]: ...

    network_blocked: bool

    @property
    def network_interfaces(self) -> Sequence[str]: ...


def untrusted(result: _ReadResult) -> str | None:
    """Why a parsed RunResult's exit codes cannot be trusted, or None.

    Both the evaluator and the CLI (`freeze open`, `admit`) refuse such a result.
    """
    for run in sorted(result.runs, key=lambda run: run.run_number):
        if not run.isolated:
            return (
                f"run the gate under linux-sandbox on a host that allows user namespaces: "
                f"run {run.run_number} could not be isolated from the other run "
                f"({run.isolation_error or 'no reason recorded'}), so it was not run"
            )
    if not result.network_blocked:
        seen = ", ".join(result.network_interfaces) or "none listed"
        return (
            "run the gate under linux-sandbox (--spawn_strategy=linux-sandbox, on a host "
            f"where it works): its double run saw network interfaces {seen}, not only "
            "loopback, so it ran without a sandbox (Bazel drops block-network silently "
            "when linux-sandbox is unavailable)"
        )
    return None


class ResultError(Exception):
    """A run result that cannot be counted; the message says why and what to do."""

    def __init__(self, message: str, result: agent_gate_pb2.RunResult | None = None) -> None:
        super().__init__(message)
        # The parsed result when only its trust failed: its runs are still evidence.
        self.result = result


def read(path: Path | None, property_id: str, run_id: str) -> agent_gate_pb2.RunResult:
    """Runs 1 and 2 of `property_id` for `run_id`, isolated and fixture-clean, or ResultError."""
    # Imported here, not above: the runner writes results and must not pay for protobuf.
    from google.protobuf import text_format  # noqa: PLC0415

    from proto import agent_gate_pb2  # noqa: PLC0415

    if path is None or not path.is_file():
        raise ResultError(f"{property_id}: run result {path} is missing; the runner did not finish")
    try:
        result = text_format.Parse(path.read_text(encoding="utf-8"), agent_gate_pb2.RunResult())
    except (text_format.ParseError, UnicodeDecodeError, OSError) as error:
        raise ResultError(
            f"{property_id}: run result {path} is corrupt ({error}); re-run the gate"
        ) from None
    numbers = sorted(run.run_number for run in result.runs)
    if result.property_id != property_id or result.run_id != run_id or numbers != [1, 2]:
        raise ResultError(
            f"{property_id}: run result {path} is not runs 1 and 2 of this property for run id "
            f"{run_id!r} (it holds {result.property_id!r}, run id {result.run_id!r}, runs "
            f"{numbers}): its runs are not fresh; re-run the gate with a new run id"
        )
    if problem := untrusted(result):
        raise ResultError(f"{property_id}: {problem}", result)
    for run in sorted(result.runs, key=lambda run: run.run_number):
        # The runner writes "error: ..." for a seal it could not compute (runner.py);
        # two equal errors must not pass for an untouched tree.
        unsealed = [
            seal
            for seal in (run.fixture_seal_before, run.fixture_seal_after)
            if seal.startswith("error:")
        ]
        if unsealed:
            raise ResultError(
                f"{property_id}: run {run.run_number} could not seal its fixtures "
                f"({unsealed[0]}), so nothing shows it left them unchanged",
                result,
            )
        if run.fixture_seal_before != run.fixture_seal_after:
            raise ResultError(
                f"{property_id}: run {run.run_number} changed its fixtures "
                f"({run.fixture_seal_before} -> {run.fixture_seal_after}); a property may "
                "read its fixtures, never write them",
                result,
            )
    return result


def outcome(result: agent_gate_pb2.RunResult) -> RunOutcome:
    """The exit codes and timeouts of runs 1 and 2, in that order."""
    first, second = sorted(result.runs, key=lambda run: run.run_number)
    return RunOutcome(
        exit_codes=(first.exit_code, second.exit_code),
        timed_out=(first.timed_out, second.timed_out),
    )
