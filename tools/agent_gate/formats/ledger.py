"""Load, validate and edit the freeze ledger (proto ``agent_gate.Ledger``).

The committed ledger is protobuf text format, one ``freeze { ... }`` block a row;
the JSON of docs/article.md (a row, a list of rows, or ``{"freeze": [...]}``) loads too. A
ledger that does not parse or validate is a configuration error, and the gate
fails closed, so every error names the file and the line of the row at fault.

Edits (``append_row``, ``set_state``) touch only the bytes they must, keep every
comment and the row order, re-validate the result, and replace the file
atomically so a crash never leaves half a ledger: the new text goes to a synced
temp file named after the writer's pid, then is renamed over the ledger. A writer
killed before the rename leaves the old ledger and a temp file, which the next
edit removes once that pid is gone.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import json_format, text_encoding, text_format

from agent_gate.core import quorum
from proto import agent_gate_pb2

STATES = ("open", "retired")
TEXT_SUFFIXES = (".txtpb", ".textproto", ".pbtxt", ".txt")
JSON_SUFFIXES = (".json",)

_FIELD_ORDER = (
    "property_id",
    "state",
    "seal",
    "reason",
    "opened_against_commit",
    "retire_by_commit_count",
    "owner",
)
_PUNCT = "{}<>[]:;,"
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_NEW_FILE_MODE = 0o644
_TEMP_SUFFIX = ".tmp"
_MAX_LISTED_IDS = 30


class LedgerError(Exception):
    """A ledger that cannot be read, parsed, validated or edited.

    Every line of the message reads ``path:LINE: what is wrong; what to do``.
    """


@dataclass(frozen=True)
class _Token:
    kind: str  # "name", "string" or "punct"
    text: str
    start: int
    end: int
    line: int


@dataclass(frozen=True)
class _TextRow:
    line: int
    # Offsets of the state value (all adjacent string literals), if present.
    state_span: tuple[int, int] | None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _tokens(text: str) -> list[_Token]:
    """Tokens of already-parsed text format: enough to find rows and values."""
    out: list[_Token] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch.isspace():
            i += 1
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(_Token("string", text[i : j + 1], i, j + 1, line))
            i = j + 1
        elif ch in _PUNCT:
            out.append(_Token("punct", ch, i, i + 1, line))
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in _PUNCT + "\"'#":
                j += 1
            out.append(_Token("name", text[i:j], i, j, line))
            i = j
    return out


def _text_rows(text: str) -> list[_TextRow]:
    """Each top-level message block, its line, and where its state value sits."""
    toks = _tokens(text)
    rows: list[_TextRow] = []
    depth = 0
    row_line = 0
    state_span: tuple[int, int] | None = None
    for k, tok in enumerate(toks):
        if tok.kind == "punct" and tok.text in "{<":
            if depth == 0:
                # `freeze {` / `freeze: {` report the field name's line.
                back = k - 1
                if back >= 0 and toks[back].text == ":":
                    back -= 1
                named = back >= 0 and toks[back].kind == "name"
                row_line = toks[back].line if named else tok.line
                state_span = None
            depth += 1
        elif tok.kind == "punct" and tok.text in "}>":
            depth -= 1
            if depth == 0:
                rows.append(_TextRow(row_line, state_span))
        elif depth == 1 and tok.kind == "name" and tok.text == "state":
            j = k + 1
            if j < len(toks) and toks[j].text == ":":
                j += 1
            first = j
            while j < len(toks) and toks[j].kind == "string":
                j += 1
            if j > first:
                state_span = (toks[first].start, toks[j - 1].end)
    return rows


def _parse_text(text: str, path: Path) -> tuple[agent_gate_pb2.Ledger, list[int]]:
    ledger = agent_gate_pb2.Ledger()
    try:
        text_format.Parse(text, ledger)
    except text_format.ParseError as err:
        line = err.GetLine() or 1
        what = re.sub(r"^\d+:\d+ : ", "", str(err)).rstrip(".")
        raise LedgerError(
            f"{path}:{line}: not a valid text-format ledger: {what}; fix the syntax "
            "(one `freeze { ... }` block a row, fields as in agent_gate.Freeze)"
        ) from err
    lines = [row.line for row in _text_rows(text)]
    return ledger, lines


def _skip_ws(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _array_items(text: str, i: int) -> list[int]:
    """Start offsets of the items of the (valid) JSON array opening at ``i``."""
    starts: list[int] = []
    i = _skip_ws(text, i + 1)
    if text[i] == "]":
        return starts
    while True:
        starts.append(i)
        _, i = _DECODER.raw_decode(text, i)
        i = _skip_ws(text, i)
        if text[i] != ",":
            return starts
        i = _skip_ws(text, i + 1)


def _object_members(text: str, i: int) -> dict[str, int]:
    """Value start offsets of the members of the (valid) JSON object at ``i``."""
    members: dict[str, int] = {}
    i = _skip_ws(text, i + 1)
    if text[i] == "}":
        return members
    while True:
        key, i = _DECODER.raw_decode(text, i)
        i = _skip_ws(text, _skip_ws(text, i) + 1)  # past the colon
        members[key] = i
        _, i = _DECODER.raw_decode(text, i)
        i = _skip_ws(text, i)
        if text[i] != ",":
            return members
        i = _skip_ws(text, i + 1)


def _parse_json(text: str, path: Path) -> tuple[agent_gate_pb2.Ledger, list[int]]:
    ledger = agent_gate_pb2.Ledger()
    if not text.strip():
        return ledger, []
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise LedgerError(
            f"{path}:{err.lineno}: not valid JSON: {err.msg} (column {err.colno}); "
            'fix the syntax (a freeze row, a list of rows, or {"freeze": [...]})'
        ) from err
    top = _skip_ws(text, 0)
    if isinstance(value, list):
        rows, starts = value, _array_items(text, top)
    elif isinstance(value, dict) and "freeze" in value:
        extra = sorted(set(value) - {"freeze"})
        if extra:
            raise LedgerError(
                f"{path}:{_line_of(text, top)}: unexpected top-level keys {extra}; "
                'a JSON ledger object holds only "freeze": [...]'
            )
        if not isinstance(value["freeze"], list):
            at = _object_members(text, top)["freeze"]
            raise LedgerError(
                f'{path}:{_line_of(text, at)}: "freeze" must be a list of rows; '
                'write "freeze": [ {...}, ... ]'
            )
        rows, starts = value["freeze"], _array_items(text, _object_members(text, top)["freeze"])
    elif isinstance(value, dict) and not value:
        rows, starts = [], []  # what json_format prints for an empty Ledger
    elif isinstance(value, dict):
        rows, starts = [value], [top]
    else:
        raise LedgerError(
            f"{path}:{_line_of(text, top)}: a JSON ledger is a freeze row, a list of rows, "
            f'or {{"freeze": [...]}}; found {type(value).__name__}'
        )
    lines = [_line_of(text, start) for start in starts]
    for row, line in zip(rows, lines, strict=True):
        if not isinstance(row, dict):
            raise LedgerError(
                f"{path}:{line}: a freeze row must be a JSON object, found "
                f'{type(row).__name__}; write {{"property_id": ..., "state": ...}}'
            )
        try:
            json_format.ParseDict(row, ledger.freeze.add())
        except json_format.ParseError as err:
            what = str(err).split("\n", 1)[0].rstrip(".")
            raise LedgerError(
                f"{path}:{line}: bad freeze row: {what}; use the field names "
                f"{', '.join(_FIELD_ORDER)}"
            ) from err
    return ledger, lines


def _validate(
    ledger: agent_gate_pb2.Ledger,
    lines: list[int],
    path: Path,
    known_ids: Collection[str] | None,
) -> None:
    problems: list[str] = []
    first_open: dict[str, int] = {}
    known = set(known_ids) if known_ids is not None else None
    for index, row in enumerate(ledger.freeze):
        line = lines[index] if index < len(lines) else 1
        where = f"{path}:{line}:"
        pid = row.property_id
        if not pid:
            problems.append(f"{where} freeze row has no property_id; name the property it freezes")
        elif known is not None and pid not in known:
            problems.append(
                f"{where} unknown property_id {pid!r}: no catalog property has it; "
                f"fix the id or delete the row in a reviewed change ({_known_hint(pid, known)})"
            )
        if row.state not in STATES:
            problems.append(
                f'{where} state {row.state!r} of {pid or "the row"!r}; use "open" or "retired"'
            )
        if row.retire_by_commit_count < 0:
            problems.append(
                f"{where} retire_by_commit_count is {row.retire_by_commit_count} for "
                f"{pid or 'the row'!r}; the commit budget must be 0 or more"
            )
        if row.state == "open" and pid:
            if pid in first_open:
                problems.append(
                    f"{where} second open row for {pid!r} (the first is at line "
                    f"{first_open[pid]}); a property has at most one open freeze: "
                    "retire or delete one row in a reviewed change"
                )
            else:
                first_open[pid] = line
    if problems:
        raise LedgerError("\n".join(problems))


def _known_hint(pid: str, known: set[str]) -> str:
    close = difflib.get_close_matches(pid, known, n=1)
    ids = sorted(known)
    listed = ", ".join(ids[:_MAX_LISTED_IDS])
    if len(ids) > _MAX_LISTED_IDS:
        listed += f", ... ({len(ids) - _MAX_LISTED_IDS} more)"
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}known ids: {listed or '(none: the catalog is empty)'}"


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise LedgerError(f"{path}:1: cannot read the ledger: {err.strerror or err}") from err
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise LedgerError(f"{path}:{line}: not UTF-8 text; save the ledger as UTF-8") from err


def _parse(text: str, path: Path) -> tuple[agent_gate_pb2.Ledger, list[int]]:
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return _parse_text(text, path)
    if suffix in JSON_SUFFIXES:
        return _parse_json(text, path)
    raise LedgerError(
        f"{path}:1: unknown ledger format {suffix or '(no suffix)'!r}; name the file "
        f"with one of {', '.join(TEXT_SUFFIXES + JSON_SUFFIXES)}"
    )


def load_ledger(path: Path, known_ids: Collection[str] | None = None) -> agent_gate_pb2.Ledger:
    """Parse and validate a ledger file; ``known_ids`` also checks every id exists."""
    text = _read(path)
    ledger, lines = _parse(text, path)
    _validate(ledger, lines, path, known_ids)
    return ledger


def ledger_rows(loaded: agent_gate_pb2.Ledger) -> tuple[quorum.LedgerRow, ...]:
    """The rows of a loaded ledger, as the quorum evaluator reads them."""
    return tuple(
        quorum.LedgerRow(
            property_id=row.property_id,
            state=row.state,
            opened_against_commit=row.opened_against_commit,
            retire_by_commit_count=row.retire_by_commit_count,
            owner=row.owner,
        )
        for row in loaded.freeze
    )


def row_lines(path: Path) -> list[int]:
    """The 1-based line where each row of the ledger file starts, in file order."""
    return _parse(_read(path), path)[1]


def format_row(freeze: agent_gate_pb2.Freeze) -> str:
    """One ``freeze { ... }`` block in the layout of docs/ledger.md, all fields written."""
    body = []
    for name in _FIELD_ORDER:
        value = getattr(freeze, name)
        if isinstance(value, str):
            body.append(f'  {name}: "{text_encoding.CEscape(value, as_utf8=True)}"')
        else:
            body.append(f"  {name}: {value}")
    return "freeze {\n" + "\n".join(body) + "\n}\n"


def _require_text(path: Path) -> None:
    if path.suffix.lower() not in TEXT_SUFFIXES:
        raise LedgerError(
            f"{path}:1: only a text-format ledger ({', '.join(TEXT_SUFFIXES)}) is edited in "
            "place; convert it to ledger.txtpb first"
        )


def _temp_prefix(path: Path, pid: int) -> str:
    return f".{path.name}.{pid}."


def _sweep_dead_writers(path: Path) -> None:
    """Remove temp files of earlier edits whose process died (SIGKILL, power loss).

    A temp file is named after its writer's pid; one whose writer still runs is
    left alone, so a live concurrent edit never loses its file.
    """
    head = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if not (name.startswith(head) and name.endswith(_TEMP_SUFFIX)):
            continue
        pid_text = name[len(head) :].split(".", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.unlink(path.parent / name)
        except OSError:
            continue  # alive, owned by someone else


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` via a synced temp file in the same directory."""
    path = Path(os.path.realpath(path))  # a symlinked ledger keeps its link
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = _NEW_FILE_MODE
    _sweep_dead_writers(path)
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=_temp_prefix(path, os.getpid()), suffix=_TEMP_SUFFIX
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # Persist the rename itself; not every filesystem lets a directory be synced.
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _write_validated(
    path: Path, text: str, known_ids: Collection[str] | None
) -> agent_gate_pb2.Ledger:
    ledger, lines = _parse_text(text, path)
    _validate(ledger, lines, path, known_ids)
    _atomic_write(path, text.encode("utf-8"))
    return ledger


def append_row(
    path: Path,
    freeze: agent_gate_pb2.Freeze,
    known_ids: Collection[str] | None = None,
) -> agent_gate_pb2.Ledger:
    """Append one row to a text ledger (created if missing); returns the new ledger."""
    _require_text(path)
    text = _read(path) if path.exists() else ""
    newline = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += newline
    if text.strip() and not text.endswith(newline * 2):
        text += newline  # a blank line between blocks, as in the committed layout
    text += format_row(freeze).replace("\n", newline)
    return _write_validated(path, text, known_ids)


def set_state(
    path: Path,
    property_id: str,
    new_state: str,
    known_ids: Collection[str] | None = None,
) -> agent_gate_pb2.Ledger:
    """Rewrite the state of the one row of ``property_id`` not yet in ``new_state``."""
    _require_text(path)
    if new_state not in STATES:
        raise LedgerError(f'{path}:1: cannot set state {new_state!r}; use "open" or "retired"')
    text = _read(path)
    ledger, _ = _parse_text(text, path)
    rows = _text_rows(text)
    if len(rows) != len(ledger.freeze):
        raise LedgerError(
            f"{path}:1: found {len(rows)} row blocks for {len(ledger.freeze)} rows; write each "
            "row as its own `freeze { ... }` block before editing"
        )
    candidates = [
        index
        for index, row in enumerate(ledger.freeze)
        if row.property_id == property_id and row.state != new_state
    ]
    if not candidates:
        same = [i for i, row in enumerate(ledger.freeze) if row.property_id == property_id]
        line = rows[same[0]].line if same else 1
        what = f"is already {new_state}" if same else "has no row"
        raise LedgerError(
            f"{path}:{line}: {property_id!r} {what} in the ledger; nothing to change "
            "(check the id with `agent-gate freeze list`)"
        )
    if len(candidates) > 1:
        at = ", ".join(str(rows[i].line) for i in candidates)
        raise LedgerError(
            f"{path}:{rows[candidates[0]].line}: {len(candidates)} rows of {property_id!r} "
            f"(lines {at}) could change to {new_state!r}; edit the intended row by hand"
        )
    target = rows[candidates[0]]
    if target.state_span is None:
        raise LedgerError(
            f'{path}:{target.line}: the row of {property_id!r} has no state field; add `state: "'
            f'{new_state}"` to it by hand'
        )
    start, end = target.state_span
    edited = text[:start] + f'"{new_state}"' + text[end:]
    return _write_validated(path, edited, known_ids)
