"""The repo-relative paths a patch touches, read from the patch text itself.

The gate must know every path a candidate diff changes, including the ones a
careless reading misses: both sides of a rename or copy, the old side of a
deletion, a file whose mode alone changed, a binary file, a name git had to
quote. The answer is what `git apply` (default `-p1`) would touch, so the paths
are read the way git reads them:

* a `diff --git` section names its file in the header, and again in
  `rename from/to`, `copy from/to`, `---`/`+++` or `Binary files ... differ`
  lines; every name found is reported, so a header that disagrees with its body
  can only add paths, never hide one;
* `---`/`+++` and header names lose their first component (`a/`, `b/` or any
  other prefix, as `-p1` does); `rename`/`copy` names have no prefix;
* C-quoted names (`"a/x y\\303\\251"`) are unquoted, octal escapes as UTF-8;
* hunk bodies are skipped by their line counts, so a removed line reading
  `-- x` (shown as `--- x`) is never taken for a header.
* a `GIT binary patch` body is skipped only while its lines look like one
  (`literal N`, base85, blank): a diff placed after it, which `git apply`
  applies too, is still read.

One pass over the lines, no backtracking: a 50,000-file patch reads in well
under a second. A text that is empty, binary or holds no diff header raises
PatchError, so a caller fails closed instead of scoring an empty diff.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

DEV_NULL = "/dev/null"

_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# The lines of a `GIT binary patch` body: hunk headers, base85 data, blank separators.
_BINARY_DATA = re.compile(r"(?:literal|delta) \d+|[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]*|")
_ESCAPES = {
    "a": 0x07,
    "b": 0x08,
    "t": 0x09,
    "n": 0x0A,
    "v": 0x0B,
    "f": 0x0C,
    "r": 0x0D,
    '"': 0x22,
    "\\": 0x5C,
}
# Extended header lines of a git section whose value is one name without prefix.
_BARE_NAME_HEADERS = ("rename from ", "rename to ", "copy from ", "copy to ")
# Older git spells renames this way; `git apply` still reads it.
_OLD_RENAME_HEADERS = ("rename old ", "rename new ")


class PatchError(ValueError):
    """The text is not a patch the gate can read; the caller must fail closed."""


def _error(line_number: int, message: str) -> PatchError:
    return PatchError(f"patch line {line_number}: {message}")


def unquote_c_style(quoted: str) -> tuple[str, int]:
    """Decode a git C-quoted name at the start of `quoted`; return it and the length consumed.

    Raises ValueError when the quoting is malformed.
    """
    if not quoted.startswith('"'):
        raise ValueError("a quoted name must start with '\"'")
    out = bytearray()
    index = 1
    length = len(quoted)
    while index < length:
        char = quoted[index]
        if char == '"':
            return out.decode("utf-8", errors="surrogateescape"), index + 1
        if char != "\\":
            out.extend(char.encode("utf-8", errors="surrogateescape"))
            index += 1
            continue
        if index + 1 >= length:
            break
        escaped = quoted[index + 1]
        if escaped in _ESCAPES:
            out.append(_ESCAPES[escaped])
            index += 2
        elif "0" <= escaped <= "3":
            octal = quoted[index + 1 : index + 4]
            if len(octal) != 3 or any(digit not in "01234567" for digit in octal):
                raise ValueError(f"bad octal escape \\{octal}")
            out.append(int(octal, 8))
            index += 4
        else:
            raise ValueError(f"unknown escape \\{escaped}")
    raise ValueError("unterminated quoted name")


def _strip_component(name: str) -> str:
    """Drop the first path component, as `git apply -p1` does (`a/x` -> `x`)."""
    head, slash, rest = name.partition("/")
    return rest if slash and head and rest else name


def _plain_or_quoted(text: str, strip: bool) -> str:
    """One name that is the whole of `text`: quoted, or plain up to a tab (git's hint)."""
    if text.startswith('"'):
        name, used = unquote_c_style(text)
        if text[used:].strip() and not text[used:].startswith("\t"):
            raise ValueError(f"text after the quoted name: {text[used:]!r}")
    else:
        # git ends an unquoted name holding a space with a tab; diff(1) puts a date there.
        name = text.split("\t", 1)[0]
        if not name.strip():
            raise ValueError("no file name")
    if name == DEV_NULL:
        return DEV_NULL
    return _strip_component(name) if strip else name


def _two_names(text: str, separator: str) -> tuple[str, str] | None:
    """Split `X<separator>Y` into two names, quoted or not; None if it cannot be told apart.

    Unquoted names are split where both halves name the same file once their
    prefixes are gone (the only shape git writes without extra headers), else at
    the only separator there is.
    """
    if text.startswith('"'):
        first, used = unquote_c_style(text)
        if not text[used:].startswith(separator):
            raise ValueError(f"expected {separator!r} after {text[:used]}")
        second = _plain_or_quoted(text[used + len(separator) :], strip=False)
        return first, second
    if text.endswith('"'):
        start = text.find(separator + '"')
        while start != -1:
            try:
                second, used = unquote_c_style(text[start + len(separator) :])
            except ValueError:
                used = -1
            if used == len(text) - start - len(separator):
                return text[:start], second
            start = text.find(separator + '"', start + 1)
    # Equal halves: "a/x y b/x y" splits in the middle.
    middle = (len(text) - len(separator)) // 2
    if text[middle : middle + len(separator)] == separator:
        left, right = text[:middle], text[middle + len(separator) :]
        if _strip_component(left) == _strip_component(right):
            return left, right
    if text.count(separator) == 1:
        left, _, right = text.partition(separator)
        return left, right
    return None


@dataclass
class _Section:
    """One file of the patch while its lines are read."""

    line_number: int
    git: bool
    header: str = ""
    names: list[str] = field(default_factory=list)
    binary_literal: bool = False

    def add(self, name: str) -> None:
        if name and name != DEV_NULL:
            self.names.append(name)


@dataclass
class _Reader:
    lines: list[str]
    paths: dict[str, None] = field(default_factory=dict)
    section: _Section | None = None
    headers_seen: int = 0

    def finish_section(self) -> None:
        section = self.section
        self.section = None
        if section is None:
            return
        if section.git and section.header and not section.names:
            raise _error(
                section.line_number,
                f"cannot tell the two file names apart in {section.header!r} and no "
                "rename, copy or ---/+++ line names them",
            )
        for name in section.names:
            self.paths.setdefault(name, None)

    def start_git_section(self, number: int, line: str) -> None:
        self.finish_section()
        self.headers_seen += 1
        section = _Section(line_number=number, git=True)
        rest = line[len("diff --git ") :]
        try:
            names = _two_names(rest, " ")
        except ValueError as error:
            raise _error(number, f"bad file names in {line!r}: {error}") from None
        if names is None:
            section.header = line  # names come from the extended headers below
        else:
            for name in names:
                section.add(name if name == DEV_NULL else _strip_component(name))
        self.section = section

    def named(self, number: int, text: str, strip: bool) -> None:
        try:
            name = _plain_or_quoted(text, strip=strip)
        except ValueError as error:
            raise _error(number, f"bad file name {text!r}: {error}") from None
        if self.section is None:
            self.section = _Section(line_number=number, git=False)
        self.section.add(name)

    def binary_files(self, number: int, line: str) -> None:
        text = line[len("Binary files ") : -len(" differ")]
        try:
            names = _two_names(text, " and ")
        except ValueError as error:
            raise _error(number, f"bad file names in {line!r}: {error}") from None
        if names is None:
            raise _error(number, f"cannot tell the two file names apart in {line!r}")
        self.headers_seen += 1
        if self.section is None:
            self.section = _Section(line_number=number, git=False)
        for name in names:
            self.section.add(name if name == DEV_NULL else _strip_component(name))

    def skip_hunk(self, start: int, match: re.Match[str]) -> int:
        """Skip a hunk's body by its line counts; return the index after it."""
        old = 1 if match.group(1) is None else int(match.group(1))
        new = 1 if match.group(2) is None else int(match.group(2))
        index = start + 1
        while old > 0 or new > 0:
            if index >= len(self.lines):
                raise _error(start + 1, "the hunk ends before its line counts are reached")
            body = self.lines[index]
            marker = body[:1]
            if marker in (" ", ""):  # an empty line is a context line whose space was lost
                old -= 1
                new -= 1
            elif marker == "-":
                old -= 1
            elif marker == "+":
                new -= 1
            elif marker != "\\":  # "\ No newline at end of file"
                raise _error(index + 1, f"corrupt hunk: unexpected line {body[:80]!r}")
            if old < 0 or new < 0:
                raise _error(index + 1, "the hunk holds more lines than its header says")
            index += 1
        # A trailing "\ No newline at end of file" belongs to the hunk.
        while index < len(self.lines) and self.lines[index].startswith("\\"):
            index += 1
        return index

    def unified_header(self, index: int) -> bool:
        """Is lines[index] the `---` of a `---`/`+++`/`@@` triple (a unified diff file)?"""
        lines = self.lines
        return (
            index + 2 < len(lines)
            and lines[index + 1].startswith("+++ ")
            and lines[index + 2].startswith("@@ ")
        )

    def read(self) -> list[str]:
        lines = self.lines
        index = 0
        while index < len(lines):
            line = lines[index].removesuffix("\r")
            number = index + 1
            section = self.section
            if section is not None and section.binary_literal:
                # Only what a binary hunk holds is skipped: `literal N`/`delta N`, base85
                # lines (which hold no spaces, so no header can pose as one) and blank
                # lines. Anything else ends it and is read like any line, because
                # `git apply` reads a patch that follows a binary hunk too.
                if _BINARY_DATA.fullmatch(line):
                    index += 1
                    continue
                section.binary_literal = False
            if line.startswith("diff --git "):
                self.start_git_section(number, line)
            elif line.startswith(("diff --cc ", "diff --combined ")):
                raise _error(number, "a combined (merge) diff cannot be applied; send a plain diff")
            elif line.startswith("@@"):
                match = _HUNK.match(line)
                if match is None:
                    raise _error(number, f"bad hunk header {line[:80]!r}")
                if section is None or (not section.names and not section.header):
                    raise _error(number, "a hunk without a file header before it")
                index = self.skip_hunk(index, match)
                continue
            elif line.startswith("--- ") and (
                (section is not None and section.git) or self.unified_header(index)
            ):
                if section is None or not section.git:
                    self.finish_section()
                    self.headers_seen += 1
                self.named(number, line[4:], strip=True)
            elif line.startswith("+++ ") and section is not None:
                self.named(number, line[4:], strip=True)
            elif line.startswith("Binary files ") and line.endswith(" differ"):
                self.binary_files(number, line)
            elif section is not None and section.git:
                self.git_extended_header(number, line)
            index += 1
        self.finish_section()
        if self.headers_seen == 0:
            raise PatchError(
                "not a patch: no `diff --git`, `---`/`+++` or `Binary files ... differ` header"
            )
        return list(self.paths)

    def git_extended_header(self, number: int, line: str) -> None:
        section = self.section
        assert section is not None
        for prefix in (*_BARE_NAME_HEADERS, *_OLD_RENAME_HEADERS):
            if line.startswith(prefix):
                self.named(number, line[len(prefix) :], strip=False)
                return
        if line == "GIT binary patch":
            section.binary_literal = True


def _as_text(patch: str | bytes) -> str:
    if isinstance(patch, bytes):
        if b"\0" in patch:
            raise PatchError("not a patch: the text holds NUL bytes (binary data)")
        try:
            return patch.decode("utf-8")
        except UnicodeDecodeError as error:
            raise PatchError(
                f"not a patch: byte {error.start} is not UTF-8; send the diff as UTF-8 text "
                "(git diff --binary for binary files)"
            ) from None
    if "\0" in patch:
        raise PatchError("not a patch: the text holds NUL characters (binary data)")
    try:
        patch.encode("utf-8")
    except UnicodeEncodeError as error:
        raise PatchError(
            f"not a patch: character {error.start} is undecodable (binary data read as text)"
        ) from None
    return patch


def touched_paths(patch_text: str | bytes) -> list[str]:
    """Repo-relative paths the patch touches, in order of first appearance, each once.

    Raises PatchError for an empty text, binary data, or a text without diff headers.
    """
    text = _as_text(patch_text)
    if not text.strip():
        raise PatchError("empty patch: there is nothing to score")
    return _Reader(text.split("\n")).read()


def read_patch(path: str | os.PathLike[str]) -> str:
    """The text of a patch file, checked to be text (UTF-8, no NUL bytes)."""
    return _as_text(Path(path).read_bytes())
