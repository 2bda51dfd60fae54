"""Writers for the gate report (proto ``agent_gate.GateReport``).

One report, five views: JSON and text format (the data), Markdown (a pull-request
comment), JUnit XML (what Bazel and CI dashboards read), and plain summary lines
(logs and CLI output). The decision and its rule always come first. Files are
replaced atomically and write errors propagate: the caller fails closed.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format
from google.protobuf.descriptor import Descriptor

from agent_gate.formats import evidence
from agent_gate.formats.terminal import terminal_safe
from proto import agent_gate_pb2

JSON_NAME = "agent_gate_report.json"
TEXT_NAME = "agent_gate_report.txtpb"
MARKDOWN_NAME = "agent_gate_report.md"
XML_NAME = "agent_gate_report.xml"

EXCLUDED_MESSAGE = "excluded: open freeze; not a pass"
_NONE = "—"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~])")
# XML 1.0 forbids most control characters; ElementTree would write them raw.
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _json_options() -> dict[str, bool]:
    # protobuf >= 26 renamed the option; older runtimes (a Bazel-pinned one) still work.
    params = inspect.signature(json_format.MessageToDict).parameters
    if "always_print_fields_with_no_presence" in params:
        return {"always_print_fields_with_no_presence": True}
    return {"including_default_value_fields": True}


def _in_field_order(value: Any, descriptor: Descriptor) -> Any:
    """Reorder keys as the proto declares them: set or not, decision stays first."""
    ordered: dict[str, Any] = {}
    for field in descriptor.fields:
        if field.name not in value:
            continue
        item = value[field.name]
        if field.message_type is not None and isinstance(item, list):
            item = [_in_field_order(element, field.message_type) for element in item]
        elif field.message_type is not None and isinstance(item, dict):
            item = _in_field_order(item, field.message_type)
        ordered[field.name] = item
    return ordered


def to_json(report: agent_gate_pb2.GateReport) -> str:
    """Proto field names, every field printed even when empty, so keys are stable."""
    data = json_format.MessageToDict(report, preserving_proto_field_name=True, **_json_options())
    ordered = _in_field_order(data, report.DESCRIPTOR)
    return json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"


def to_text(report: agent_gate_pb2.GateReport) -> str:
    """Protobuf text format; ``text_format.Parse`` reads it back unchanged."""
    return text_format.MessageToString(report, as_utf8=True)


def _codes(row: agent_gate_pb2.Row) -> str:
    return ", ".join(str(code) for code in row.exit_codes) or _NONE


def _md(value: str) -> str:
    """One Markdown table cell or list item: agent-written paths cannot inject markup
    (nor controls)."""
    flat = terminal_safe(" ".join(value.split())) if value else ""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", flat) or _NONE


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_md(cell) for cell in row) + " |" for row in rows]
    return lines


def _md_list(title: str, items: Sequence[str]) -> list[str]:
    if not items:
        return []
    return ["", f"**{title}**", "", *(f"- {_md(item)}" for item in items)]


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in `text`, so output cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _what_to_fix(report: agent_gate_pb2.GateReport) -> list[str]:
    """The evidence of every failing, split or timed-out run, first, for the agent to act on."""
    lines: list[str] = []
    for row in report.rows:
        if not row.evidence:
            continue
        lines += ["", f"**{_md(row.property_id)}** ({_md(row.strength)}): {_md(row.note)}"]
        if row.split:
            lines += ["", f"What differed: {_md(row.split)}"]
        for run in row.evidence:
            lines += ["", f"- {_md(evidence.describe(run))}"]
            body = run.output_tail or "(no output)"
            if run.output_bytes_omitted:
                body = f"[... {run.output_bytes_omitted} earlier bytes]\n{body}"
            fence = _fence(body)
            lines += ["", f"{fence}text", body, fence]
    return ["", "### What to fix", *lines] if lines else []


def to_markdown(report: agent_gate_pb2.GateReport) -> str:
    """A pull-request comment: decision and rule first, then what to fix, then every row."""
    lines = [f"**agent_gate: {_md(report.decision)}** — {_md(report.rule)}"]
    lines += _what_to_fix(report)
    lines += [""]
    lines += _md_table(
        ("property", "strength", "matched by", "runs", "classification", "vote", "seal"),
        [
            (
                row.property_id,
                row.strength,
                row.matched_by if row.matched else "",
                _codes(row),
                row.classification,
                row.vote,
                row.seal_status,
            )
            for row in report.rows
        ],
    )
    lines += _md_list(
        "Notes", [f"{row.property_id}: {row.note}" for row in report.rows if row.note]
    )
    lines += _md_list("Reasons", report.reasons)
    lines += _md_list("Guarded paths touched (a human must review)", report.guarded_paths)
    lines += _md_list("Touched paths no strong property observes", report.unobserved_paths)
    lines += _md_list("Targets that would run unsandboxed", report.unsandboxed_targets)
    lines += _md_list("Errors (the gate failed closed)", report.errors)
    lines += ["", f"**Debt:** {report.debt} / {report.debt_cap} (open freezes + spent budgets)"]
    if report.HasField("override"):
        ignored = ", ".join(report.override.ignored_ids) or _NONE
        lines += ["", f"**Override** by {_md(report.override.by)}, ignoring {_md(ignored)}"]
    if report.ledger:
        lines += ["", "**Ledger**", ""]
        lines += _md_table(
            ("property", "state", "owner", "opened against", "budget", "commits since", "spent"),
            [
                (
                    entry.property_id,
                    entry.state,
                    entry.owner,
                    entry.opened_against_commit,
                    str(entry.retire_by_commit_count),
                    str(entry.commits_since_open) if entry.commits_since_open >= 0 else "unknown",
                    "yes" if entry.spent else "no",
                )
                for entry in report.ledger
            ],
        )
    if report.fixtures:
        lines += ["", "**Fixtures**", ""]
        lines += _md_table(
            ("tree", "seal file", "status", "expected", "actual"),
            [
                (fx.root, fx.seal_file, fx.status, fx.expected[:12], fx.actual[:12])
                for fx in report.fixtures
            ],
        )
    footer = f"Changed paths: {report.changed_path_count}"
    if report.run_id:
        footer += f" · run id {_md(report.run_id)}"
    footer += f" · {runs_line(report)}"
    lines += ["", footer]
    return "\n".join(lines) + "\n"


def runs_line(report: agent_gate_pb2.GateReport) -> str:
    """How many properties ran, and whether their runs were this invocation's own."""
    ran = sum(1 for row in report.rows if row.exit_codes)
    if not ran:
        return "no property ran"
    fresh = "fresh (this run id's own)" if report.runs_fresh else "NOT known to be fresh"
    return f"{ran} propert{'y' if ran == 1 else 'ies'} ran twice, {fresh}"


def _xml(value: str) -> str:
    return _XML_INVALID.sub(lambda m: f"\\u{ord(m.group()):04x}", value)


def _sub(parent: ET.Element, tag: str, **attrs: str) -> ET.Element:
    return ET.SubElement(parent, tag, {key: _xml(value) for key, value in attrs.items()})


def to_junit(report: agent_gate_pb2.GateReport) -> str:
    """JUnit XML: one testcase per matched row plus a ``decision`` testcase."""
    matched = [row for row in report.rows if row.matched]
    failures = sum(row.vote == "no" for row in matched) + (report.decision != "promote")
    skipped = sum(row.vote == "excluded" for row in matched)
    counts = {
        "tests": str(len(matched) + 1),
        "failures": str(failures),
        "errors": "0",
        "skipped": str(skipped),
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": "agent_gate", **counts})
    suite = _sub(root, "testsuite", name="agent_gate", **counts)
    props = _sub(suite, "properties")
    for name, value in (
        ("decision", report.decision),
        ("rule", report.rule),
        ("run_id", report.run_id),
        ("runs", runs_line(report)),
        ("debt", f"{report.debt}/{report.debt_cap}"),
    ):
        _sub(props, "property", name=name, value=value)
    for row in matched:
        case = _sub(suite, "testcase", classname=row.strength, name=row.property_id, time="0")
        if row.vote == "no":
            failure = _sub(
                case,
                "failure",
                message=f"{row.classification}; exit codes {_codes(row)}",
                type=row.classification or "vote_no",
            )
            details = [
                f"vote: no\nclassification: {row.classification}\nexit codes: {_codes(row)}\n"
                f"seal: {row.seal_status}\nmatched by: {row.matched_by}\n{row.note}".rstrip()
            ]
            if row.split:
                details.append(f"what differed: {row.split}")
            for run in row.evidence:
                details += [f"--- {evidence.describe(run)} ---", run.output_tail]
            failure.text = _xml("\n".join(details))
        elif row.vote == "excluded":
            _sub(case, "skipped", message=EXCLUDED_MESSAGE)
    decision = _sub(suite, "testcase", classname="agent_gate", name="decision", time="0")
    if report.decision != "promote":
        failure = _sub(
            decision, "failure", message=f"{report.decision}: {report.rule}", type="decision"
        )
        details = [f"reason: {r}" for r in report.reasons]
        details += [f"guarded: {g}" for g in report.guarded_paths]
        details += [f"unobserved: {u}" for u in report.unobserved_paths]
        details += [f"unsandboxed: {u}" for u in report.unsandboxed_targets]
        details += [f"error: {e}" for e in report.errors]
        failure.text = _xml("\n".join(details))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def summary_lines(report: agent_gate_pb2.GateReport) -> list[str]:
    """Plain text: the decision line, one aligned line per row, then what blocked.

    Every line is `terminal_safe`: paths and notes come from the patch.
    """
    return [terminal_safe(line) for line in _summary_lines(report)]


def _summary_lines(report: agent_gate_pb2.GateReport) -> list[str]:
    lines = [f"agent_gate: {report.decision or '(none)'} — {report.rule}"]
    table = [
        (
            row.property_id,
            row.strength,
            row.classification or "-",
            f"vote={row.vote or '-'}",
            f"exits={','.join(str(code) for code in row.exit_codes) or '-'}",
            f"seal={row.seal_status or '-'}",
            f"matched_by={row.matched_by}" if row.matched else "not matched",
        )
        for row in report.rows
    ]
    widths = [max((len(cells[i]) for cells in table), default=0) for i in range(7)]
    for cells in table:
        lines.append(
            "  " + "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))
        )
        lines[-1] = lines[-1].rstrip()
    lines += [
        f"  evidence: {row.property_id} {evidence.describe(run)}"
        for row in report.rows
        for run in row.evidence
    ]
    lines += [f"  reason: {reason}" for reason in report.reasons]
    lines += [f"  guarded: {path}" for path in report.guarded_paths]
    lines += [f"  unobserved: {path}" for path in report.unobserved_paths]
    lines += [f"  unsandboxed: {target}" for target in report.unsandboxed_targets]
    lines += [f"  error: {error}" for error in report.errors]
    lines.append(f"  debt: {report.debt}/{report.debt_cap}")
    lines.append(
        f"  runs: {runs_line(report)}" + (f", run id {report.run_id}" if report.run_id else "")
    )
    return lines


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file and a rename: never half a report."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_all(
    report: agent_gate_pb2.GateReport, out_dir: Path, xml_path: Path | None = None
) -> list[Path]:
    """Write text, Markdown, JUnit XML and JSON; the XML goes to ``xml_path`` if given.

    The JSON report, the one machines read the decision from, is written last: if
    any write fails (a full disk), no JSON claims a decision the gate could not
    finish reporting.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    xml_target = xml_path if xml_path is not None else out_dir / XML_NAME
    xml_target.parent.mkdir(parents=True, exist_ok=True)
    outputs = [
        (out_dir / TEXT_NAME, to_text(report)),
        (out_dir / MARKDOWN_NAME, to_markdown(report)),
        (xml_target, to_junit(report)),
        (out_dir / JSON_NAME, to_json(report)),
    ]
    for path, text in outputs:
        write_atomically(path, text)
    return [path for path, _ in outputs]
