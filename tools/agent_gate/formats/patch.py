"""The repo-relative paths a patch touches, read from its bytes the way `git apply` reads them.

The gate's guards see only the paths this module reports, so they must be the
very names `git apply` (git 2.39, default `-p1`, run at the repository top or
with `--directory`) gives each file of the patch: its old and its new name,
which are `git apply --numstat -z` (new name, else old) and `git apply -R
--numstat -z` (old name, else new) together. A copy's source is among them.
Nothing is guessed from how a name looks; git's own rules are followed:

* a file starts where git's header search finds one: a `diff --git` line with
  at least one extended header line it knows, or a `---` line, a `+++` line and
  an `@@ -` line in a row; every other line before it is skipped, as git does;
* `diff --git A B` gives a name only when A and B are the same name under
  their prefixes (git's split at a space or tab, or quoted names); `---`/`+++`,
  `rename`/`copy` and `new`/`deleted file mode` lines give the rest, and a name
  a section leaves unset keeps what an earlier, skipped header of the same
  search put there, as in git;
* `---`/`+++` names of a header without `diff --git` lose a trailing date
  (`2020-01-01 00:00:00.000000000 +0000`, date only, `+08:00` zones ...) after
  a tab or any spaces, else end at a tab; a carriage return ends any
  unquoted name, and a CRLF line keeps its date;
* C-quoted names are unquoted byte for byte (a quote may run on to a later
  line, as git lets it); `-p1` drops one leading component; a `---`/`+++` header
  whose `+++` name has no slash switches the rest of the patch to `-p0`, as
  git's guess does (never under `--directory`);
* hunk bodies and `GIT binary patch` data are consumed exactly as git does
  (line counts, base85 and zlib), so no line inside them is taken for a header.

This is git's reading of the patch (what `--numstat` sees), not its checks
against a tree: a patch that names a missing file, or holds nothing but a
header (git's "patch with only garbage"), is read here and refused later by
`git apply --check`.

Names are bytes; a name that is not UTF-8 comes out with surrogate escapes, so
`name.encode("utf-8", "surrogateescape")` is git's name. The reader is one pass
over the bytes, linear in their size (a binary hunk is inflated, as git checks it,
in bounded chunks that are not kept): git's quadratic corner (a quoted name that
runs on across many lines) is refused past a budget instead. Whatever git
refuses to read, the reader refuses with PatchError, and so it does for what
git would silently cut short (a corrupt binary hunk), for text that is no patch
at all (empty, no header, a combined diff) and for NUL bytes.
"""

from __future__ import annotations

import base64
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

DEV_NULL = "/dev/null"
# git refuses patch files this large (MAX_APPLY_SIZE).
MAX_PATCH_BYTES = 1024 * 1024 * 1024

_GIT_SPACE = frozenset(b" \t\n\r")  # git's isspace(); \v and \f are not spaces to git
_ULONG_MAX = 2**64 - 1
_QUOTE_OR_BACKSLASH = re.compile(rb'["\\]')
_ESCAPES = {
    ord("a"): 0x07,
    ord("b"): 0x08,
    ord("f"): 0x0C,
    ord("n"): 0x0A,
    ord("r"): 0x0D,
    ord("t"): 0x09,
    ord("v"): 0x0B,
    ord("\\"): 0x5C,
    ord('"'): 0x22,
}
_DIGITS = re.compile(rb"[0-9]+")
_SLASHES = re.compile(rb"/{2,}")
_MODE = re.compile(rb"[ \t\n\v\f\r]*[+-]?[0-7]+")  # strtoul(..., 8)
_MODE_ENDS = (b" ", b"\t", b"\n", b"\r")
_STRTOUL = re.compile(rb"[ \t\n\v\f\r]*([+-]?)([0-9]+)")
_EPOCH_TIME = re.compile(rb"([0-2][0-9]):([0-5][0-9]):00(?:\.0+)? ([-+])([0-2][0-9]:?[0-5][0-9])\n")
# Extended header lines of a `diff --git` section, in the order git tries them.
_GIT_HEADER_LINES = (
    b"@@ -",
    b"--- ",
    b"+++ ",
    b"old mode ",
    b"new mode ",
    b"deleted file mode ",
    b"new file mode ",
    b"copy from ",
    b"copy to ",
    b"rename old ",
    b"rename new ",
    b"rename from ",
    b"rename to ",
    b"similarity index ",
    b"dissimilarity index ",
    b"index ",
)
# Lines that name one side of a copy or rename, without a prefix to drop.
_OLD_NAME_LINES = (b"copy from ", b"rename old ", b"rename from ")
_NEW_NAME_LINES = (b"copy to ", b"rename new ", b"rename to ")
_GIT_HEADER_LINE = re.compile(b"|".join(re.escape(kind) for kind in _GIT_HEADER_LINES))
# What ends an unquoted name that has no date after it: a newline or CR, and maybe a tab.
_NAME_END = re.compile(rb"[\n\r]")
_NAME_END_TAB = re.compile(rb"[\n\r\t]")
_HEX_SIZE = 40  # a SHA-1 repository's object names


class PatchError(ValueError):
    """The bytes are not a patch the gate can read; the caller must fail closed."""


@dataclass(frozen=True)
class FileChange:
    """One file of the patch as git parsed it: its old and new name (None: none)."""

    old: str | None
    new: str | None
    copy: bool = False

    def names(self) -> tuple[str, ...]:
        return tuple(name for name in (self.old, self.new) if name is not None)


@dataclass
class _Patch:
    """The fields of git's `struct patch` that decide its names (-1: not known yet)."""

    old: bytes | None = None
    new: bytes | None = None
    default: bytes | None = None
    is_new: int = -1
    is_delete: int = -1
    is_rename: bool = False
    is_copy: bool = False


def _digit(byte: int) -> bool:
    return 0x30 <= byte <= 0x39


def _c_string(name: bytes) -> bytes:
    """What C sees of a buffer: everything before the first NUL."""
    return name.split(b"\0", 1)[0]


def _squash(name: bytes) -> bytes:
    """git's squash_slash(): runs of slashes become one."""
    return _SLASHES.sub(b"/", _c_string(name))


def _strtoul(data: bytes, start: int) -> int:
    """C's strtoul(data + start, NULL, 10)."""
    match = _STRTOUL.match(data, start)
    if match is None:
        return 0
    value = int(match.group(2))
    if value > _ULONG_MAX:
        return _ULONG_MAX
    return (-value) % 2**64 if match.group(1) == b"-" else value


def _skip_tree_prefix(p_value: int, name: bytes) -> int | None:
    """Where `name` starts once `p_value` components are gone; None if git refuses it."""
    if p_value == 0:
        return None if name[:1] == b"/" else 0
    index = -1
    for _ in range(p_value):
        index = name.find(b"/", index + 1)
        if index == -1:
            return None
    return None if index == 0 and p_value == 1 else index + 1


# The shapes of a trailing date git's header reading strips (diff_timestamp_len()).
def _tz_len(line: bytes, end: int) -> int:
    """` +0500` or ` +08:00` (either sign) ending the text before `end`."""
    zone = line[max(end - 6, 0) : end]
    if zone[:1] == b" " and zone[1:2] in (b"+", b"-") and _fixed(zone[2:], b"dddd"):
        return 6
    zone = line[max(end - 7, 0) : end]
    if zone[:1] == b" " and zone[1:2] in (b"+", b"-") and _fixed(zone[2:], b"dd:dd"):
        return 7
    return 0


def _fixed(text: bytes, shape: bytes) -> bool:
    """Does `text` have `shape` (d: a digit, other bytes: themselves)?"""
    return len(text) == len(shape) and all(
        _digit(byte) if want == 0x64 else byte == want
        for byte, want in zip(text, shape, strict=True)
    )


def _short_time_len(line: bytes, end: int) -> int:
    return 9 if end >= 9 and _fixed(line[end - 9 : end], b" dd:dd:dd") else 0


def _time_len(line: bytes, end: int) -> int:
    found = _short_time_len(line, end)
    if found or end == 0 or not _digit(line[end - 1]):
        return found
    point = end - 1
    while point > 0 and _digit(line[point]):
        point -= 1
    if line[point] != 0x2E:
        return 0
    whole = _short_time_len(line, point)
    return end - point + whole if whole else 0


def _date_len(line: bytes, end: int) -> int:
    if end < 8 or not _fixed(line[end - 8 : end], b"dd-dd-dd"):
        return 0
    start = end - 8
    if start >= 2 and _digit(line[start - 1]) and _digit(line[start - 2]):
        start -= 2
    return end - start


def _timestamp_len(line: bytes) -> int:
    """How many trailing bytes of a `---`/`+++` name are a date and what precedes it."""
    if not line or not _digit(line[-1]):
        return 0
    end = len(line)
    end -= _tz_len(line, end)
    end -= _time_len(line, end)
    date = _date_len(line, end)
    if not date:
        return 0
    end -= date
    if end == 0:
        return 0
    if line[end - 1] == 0x09:
        return len(line) - end + 1
    if line[end - 1] != 0x20:
        return 0
    while end > 0 and line[end - 1] == 0x20:  # spaces a mailer or editor left
        end -= 1
    return len(line) - end


class _Reader:
    def __init__(self, data: bytes, root: bytes) -> None:
        self.buf = data
        self.size = len(data)
        self.root = root
        self.p_value = 1
        # Under --directory every guessed name holds a slash, so git never switches to -p0.
        self.p_known = bool(root)
        self.changes: list[FileChange] = []
        # Quoted names may run across lines; git rescans them, the reader stops here.
        self.quote_budget = 8 * self.size + 65536

    # --- where things are ---------------------------------------------------------
    def line_end(self, start: int) -> int:
        """The index after `start`'s line, its newline included (git's linelen())."""
        newline = self.buf.find(b"\n", start)
        return self.size if newline == -1 else newline + 1

    def error(self, position: int, message: str, git_refuses: bool = True) -> PatchError:
        """A PatchError at `position`'s line; most say git apply would refuse the patch too."""
        number = self.buf.count(b"\n", 0, position) + 1
        why = (
            "; git apply refuses this too, so the patch was damaged or written by hand: "
            "make it again with `git diff --binary`"
            if git_refuses
            else ""
        )
        return PatchError(f"patch line {number}: {message}{why}")

    def shown(self, start: int) -> str:
        line = self.buf[start : self.line_end(start)].rstrip(b"\r\n")
        return repr(line[:80].decode("utf-8", "backslashreplace"))

    # --- names --------------------------------------------------------------------
    def unquote(self, start: int) -> tuple[bytes, int] | None:
        """A C-quoted name at `start` and the index after its closing quote, or None."""
        buf = self.buf
        out = bytearray()
        index = start + 1
        while True:
            found = _QUOTE_OR_BACKSLASH.search(buf, index)
            at = self.size if found is None else found.start()
            self.quote_budget -= at - index + 2
            if self.quote_budget < 0:
                raise self.error(
                    start,
                    "a quoted name runs on across too many lines to read in linear time; "
                    "git diff always ends a quoted name on its own line",
                    git_refuses=False,
                )
            if found is None:
                return None  # the NUL that ends git's buffer
            out += buf[index:at]
            if buf[at] == 0x22:
                return bytes(out), at + 1
            escaped = buf[at + 1] if at + 1 < self.size else 0
            if escaped in _ESCAPES:
                out.append(_ESCAPES[escaped])
                index = at + 2
            elif 0x30 <= escaped <= 0x33:
                digits = buf[at + 2 : at + 4]
                if len(digits) != 2 or any(not 0x30 <= byte <= 0x37 for byte in digits):
                    return None
                out.append(((escaped - 0x30) << 6) | ((digits[0] - 0x30) << 3) | (digits[1] - 0x30))
                index = at + 4
            else:
                return None

    def name_quoted(self, start: int, p_value: int) -> bytes | None:
        """git's find_name_gnu()."""
        unquoted = self.unquote(start)
        if unquoted is None:
            return None
        name = _c_string(unquoted[0])
        cut = 0
        for _ in range(p_value):
            slash = name.find(b"/", cut)
            if slash == -1:
                return None
            cut = slash + 1
        return _squash(self.root + name[cut:])

    def name_plain(
        self,
        start: int,
        default: bytes | None,
        p_value: int,
        end: int | None = None,
        tab_ends: bool = True,
    ) -> bytes | None:
        """git's find_name_common(): up to `end`, or to a newline, CR (or tab) if None."""
        buf = self.buf
        if end is None:
            found = (_NAME_END_TAB if tab_ends else _NAME_END).search(buf, start)
            index = self.size if found is None else found.start()
        else:
            index = end
        name_start: int | None = start
        slash = start - 1
        for _ in range(p_value):  # the name starts after the p-th slash
            slash = buf.find(b"/", slash + 1, index)
            if slash == -1:
                name_start = None
                break
            name_start = slash + 1
        if name_start is None or index == name_start:
            return default
        if (
            default is not None
            and len(default) < index - name_start
            and buf[name_start : name_start + len(default)] == default
        ):
            return default  # git prefers "x" over "x.orig" or "x~"
        return _squash(self.root + buf[name_start:index])

    def name(self, start: int, p_value: int, tab_ends: bool) -> bytes | None:
        """git's find_name()."""
        if self.buf[start : start + 1] == b'"':
            quoted = self.name_quoted(start, p_value)
            if quoted is not None:
                return quoted
        return self.name_plain(start, None, p_value, tab_ends=tab_ends)

    def name_traditional(self, start: int, default: bytes | None, p_value: int) -> bytes | None:
        """git's find_name_traditional(): a `---`/`+++` name, a trailing date dropped."""
        if self.buf[start : start + 1] == b'"':
            quoted = self.name_quoted(start, p_value)
            if quoted is not None:
                return quoted
        end = self.buf.find(b"\n", start)
        end = self.size if end == -1 else end
        date = _timestamp_len(self.buf[start:end])
        if not date:
            return self.name_plain(start, default, p_value)
        return self.name_plain(start, default, p_value, end=end - date)

    def is_dev_null(self, start: int) -> bool:
        after = start + len(DEV_NULL)
        return (
            self.buf.startswith(b"/dev/null", start)
            and after < self.size
            and self.buf[after] in _GIT_SPACE
        )

    def header_name(self, start: int, end: int) -> bytes | None:
        """git's git_header_name(): the name `diff --git A B` gives when A and B agree."""
        buf = self.buf
        p_value = self.p_value
        line = start + len(b"diff --git ")
        if buf[line] == 0x22:
            unquoted = self.unquote(line)
            if unquoted is None:
                return None
            first, second = unquoted
            cut = _skip_tree_prefix(p_value, first)
            if cut is None:
                return None
            first = first[cut:]
            while second < end and buf[second] in _GIT_SPACE:
                second += 1
            if second >= end:
                return None
            if buf[second] == 0x22:
                other = self.unquote(second)
                if other is None:
                    return None
                cut = _skip_tree_prefix(p_value, other[0])
                if cut is None or _c_string(other[0][cut:]) != _c_string(first):
                    return None
                return _c_string(first)
            # git compares the newline too, so only a name ending in "\n" matches here.
            cut = _skip_tree_prefix(p_value, buf[second:end])
            if cut is None or buf[second + cut : end] != first:
                return None
            return _c_string(first)
        cut = _skip_tree_prefix(p_value, buf[line:end])
        if cut is None:
            return None
        name = line + cut
        quote = buf.find(b'"', name, end)
        if quote != -1:
            unquoted = self.unquote(quote)
            if unquoted is None:
                return None
            cut = _skip_tree_prefix(p_value, unquoted[0])
            if cut is None:
                return None
            tail = unquoted[0][cut:]
            size = len(tail)
            fits = size < quote - name and buf[name : name + size] == tail
            return tail if fits and buf[name + size] in _GIT_SPACE else None
        # Unquoted: the first space or tab after which the same name follows its prefix.
        newline = end - 1
        slash = -1
        for index in range(name, newline):
            if buf[index] not in b" \t":
                continue
            rest = index + 1
            if p_value == 0:
                if rest < newline and buf[rest] == 0x2F:
                    return None
                second = rest
            else:
                if slash < rest:
                    slash = buf.find(b"/", rest, newline)
                if slash in (-1, rest):
                    return None
                second = slash + 1
            length = index - name
            if second + length == newline:
                return buf[name:index] if buf[second:newline] == buf[name:index] else None
            if second + length > newline:
                return None  # later separators only push the second name further out
        return None

    # --- headers ------------------------------------------------------------------
    def git_header(self, start: int, end: int, patch: _Patch) -> int:
        """git's parse_git_diff_header(); returns the index after the header lines."""
        buf = self.buf
        patch.is_new = 0
        patch.is_delete = 0
        default = self.header_name(start, end)
        patch.default = None if default is None else self.root + default
        line = end
        while line < self.size:
            line_end = self.line_end(line)
            if buf[line_end - 1] != 0x0A:
                break
            found = _GIT_HEADER_LINE.match(buf, line)
            kind = b"" if found is None else found.group()
            if kind in (b"", b"@@ -"):
                break
            self.git_header_line(kind, line + len(kind), line, patch)
            extensions = (
                (patch.is_delete == 1)
                + (patch.is_new == 1)
                + int(patch.is_rename)
                + int(patch.is_copy)
            )
            if extensions > 1:
                raise self.error(line, "inconsistent header lines")
            line = line_end
        if patch.old is None and patch.new is None:
            if patch.default is None:
                raise self.error(
                    start,
                    f"git diff header {self.shown(start)} lacks filename information when "
                    f"removing {self.p_value} leading pathname component(s). git apply refuses "
                    "it too. git diff itself writes such a header for a new, deleted or "
                    "mode-changed file whose name git cannot split back (spaces around a "
                    "slash, as in `diff --git a/ /  b/ / `): rename that file; else the patch "
                    "was damaged or written by hand: make it again with `git diff --binary`",
                    git_refuses=False,
                )
            patch.old = patch.new = patch.default
        if (patch.new is None and patch.is_delete != 1) or (
            patch.old is None and patch.is_new != 1
        ):
            raise self.error(
                start, f"git diff header {self.shown(start)} lacks filename information"
            )
        return line

    def git_header_line(self, kind: bytes, value: int, line: int, patch: _Patch) -> None:
        bare = self.p_value - 1 if self.p_value else 0
        if kind in (b"--- ", b"+++ "):
            old = kind == b"--- "
            isnull = patch.is_new if old else patch.is_delete
            current = patch.old if old else patch.new
            if current is None and not isnull:
                name = self.name(value, self.p_value, tab_ends=True)
                if old:
                    patch.old = name
                else:
                    patch.new = name
            elif current is not None:
                if isnull:
                    raise self.error(
                        line, f"bad git-diff: expected /dev/null in {self.shown(line)}"
                    )
                if self.name(value, self.p_value, tab_ends=True) != current:
                    side = "old" if old else "new"
                    raise self.error(line, f"bad git-diff: inconsistent {side} filename")
            elif not self.is_dev_null(value):
                raise self.error(line, f"bad git-diff: expected /dev/null in {self.shown(line)}")
        elif kind in (b"old mode ", b"new mode "):
            self.mode(value, line)
        elif kind == b"deleted file mode ":
            patch.is_delete = 1
            patch.old = patch.default
            self.mode(value, line)
        elif kind == b"new file mode ":
            patch.is_new = 1
            patch.new = patch.default
            self.mode(value, line)
        elif kind in _OLD_NAME_LINES or kind in _NEW_NAME_LINES:
            if kind.startswith(b"copy"):
                patch.is_copy = True
            else:
                patch.is_rename = True
            name = self.name(value, bare, tab_ends=False)
            if kind in _OLD_NAME_LINES:
                patch.old = name
            else:
                patch.new = name
        elif kind == b"index ":
            self.index_line(value, line)

    def mode(self, start: int, line: int) -> None:
        match = _MODE.match(self.buf, start)
        if match is None or self.buf[match.end() : match.end() + 1] not in _MODE_ENDS:
            raise self.error(line, f"invalid mode in {self.shown(line)}")

    def index_line(self, start: int, line: int) -> None:
        """git's gitdiff_index(): only a mode after the object names can be wrong.

        git's searches may run past the line; past 40 bytes their answer is ignored,
        so they stop there.
        """
        buf = self.buf
        dot = buf.find(b".", start, start + _HEX_SIZE + 1)
        if dot == -1 or buf[dot + 1 : dot + 2] != b".":
            return
        new = dot + 2
        window = new + _HEX_SIZE + 1
        stops = [
            at for at in (buf.find(b" ", new, window), buf.find(b"\n", new, window)) if at != -1
        ]
        if not stops:
            return
        stop = min(stops)
        if buf[stop] == 0x20:
            self.mode(stop + 1, line)

    def guess_p_value(self, start: int) -> int:
        if self.is_dev_null(start):
            return -1
        name = self.name_traditional(start, None, 0)
        if name is None:
            return -1
        return -1 if b"/" in name else 0

    def epoch(self, start: int) -> bool:
        """git's has_epoch_timestamp(): does GNU diff's creation/deletion date end the line?"""
        buf = self.buf
        newline = buf.find(b"\n", start)
        newline = self.size if newline == -1 else newline
        tab = buf.rfind(b"\t", start, newline)
        if tab == -1:
            return False
        stamp = tab + 1
        if buf.startswith(b"1969-12-31 ", stamp):
            epoch_hour = 24
        elif buf.startswith(b"1970-01-01 ", stamp):
            epoch_hour = 0
        else:
            return False
        match = _EPOCH_TIME.match(buf, stamp + 11)
        if match is None:
            return False
        hour, minute, sign, zone = match.groups()
        if b":" in zone:
            offset = int(zone[:2]) * 60 + int(zone[3:])
        else:
            offset = int(zone[:2]) * 60 + int(zone[2:])
        if sign == b"-":
            offset = -offset
        return int(hour) * 60 + int(minute) - offset == epoch_hour * 60

    def traditional_header(self, first: int, second: int, patch: _Patch) -> None:
        """git's parse_traditional_patch() for a `---` line and the `+++` line after it."""
        first += 4
        second += 4
        if not self.p_known:
            old_guess = self.guess_p_value(first)
            new_guess = self.guess_p_value(second)
            if old_guess < 0:
                old_guess = new_guess
            if 0 <= old_guess == new_guess:
                self.p_value = old_guess
                self.p_known = True
        if self.is_dev_null(first):
            patch.is_new, patch.is_delete = 1, 0
            name = patch.new = self.name_traditional(second, None, self.p_value)
        elif self.is_dev_null(second):
            patch.is_new, patch.is_delete = 0, 1
            name = patch.old = self.name_traditional(first, None, self.p_value)
        else:
            old_name = self.name_traditional(first, None, self.p_value)
            name = self.name_traditional(second, old_name, self.p_value)
            if self.epoch(first):
                patch.is_new, patch.is_delete = 1, 0
                patch.new = name
            elif self.epoch(second):
                patch.is_new, patch.is_delete = 0, 1
                patch.old = name
            else:
                patch.old = patch.new = name
        if name is None:
            raise self.error(first, "unable to find a file name in this ---/+++ header")

    def find_header(self, start: int) -> tuple[_Patch, int] | None:
        """git's find_header(): the next file's header and the index after it, or None."""
        buf = self.buf
        patch = _Patch()
        patch.is_new = patch.is_delete = -1
        line = start
        while line < self.size:
            end = self.line_end(line)
            length = end - line
            if length < 6:
                line = end
                continue
            if buf.startswith(b"@@ -", line) and _fragment_counts(buf[line:end]) is not None:
                raise self.error(
                    line, f"a hunk without a file header before it: {self.shown(line)}"
                )
            if self.size - line < length + 6:
                return None
            if buf.startswith((b"diff --cc ", b"diff --combined "), line):
                raise self.error(
                    line,
                    "a combined (merge) diff cannot be applied; make the patch with "
                    "`git diff --binary <base> <merge commit>`, which git apply reads",
                    git_refuses=False,
                )
            if buf.startswith(b"diff --git ", line):
                header_end = self.git_header(line, end, patch)
                if header_end > end:
                    return patch, header_end
            elif buf.startswith(b"--- ", line) and buf.startswith(b"+++ ", end):
                next_end = self.line_end(end)
                if self.size - line >= next_end - end + 14 and buf.startswith(b"@@ -", next_end):
                    self.traditional_header(line, end, patch)
                    return patch, next_end
            line = end
        return None

    # --- bodies -------------------------------------------------------------------
    def hunks(self, start: int, patch: _Patch) -> int:
        """git's parse_single_patch(): skip the text hunks at `start`; the index after them."""
        old_total = new_total = 0
        at = start
        while self.size - at > 4 and self.buf.startswith(b"@@ -", at):
            parsed = self.hunk(at)
            if parsed is None:
                raise self.error(at, f"corrupt patch: the hunk at {self.shown(at)} does not add up")
            at, old, new = parsed
            old_total += old
            new_total += new
        if patch.is_new == 1 and old_total:
            raise self.error(start, "a new file that depends on old contents")
        if patch.is_delete == 1 and new_total:
            raise self.error(start, "a deleted file that still has contents")
        return at

    def hunk(self, start: int) -> tuple[int, int, int] | None:
        """git's parse_fragment(): (index after the hunk, its old and new line counts)."""
        buf = self.buf
        end = self.line_end(start)
        counts = _fragment_counts(buf[start:end])
        if counts is None:
            return None
        old, new = counts
        at = end
        changed = False
        while at < self.size and (old or new):
            end = self.line_end(at)
            if buf[end - 1] != 0x0A:
                return None  # git wants every hunk line to end in a newline
            marker = buf[at]
            if marker in (0x20, 0x0A):
                old -= 1
                new -= 1
            elif marker == 0x2D:
                old -= 1
                changed = True
            elif marker == 0x2B:
                new -= 1
                changed = True
            elif marker != 0x5C or end - at < 12 or buf[at + 1] != 0x20:
                return None
            if old < 0 or new < 0:
                return None  # git's unsigned counter wraps and never reaches zero
            at = end
        if old or new or not changed:
            return None
        if self.size - at > 12 and buf.startswith(b"\\ ", at):
            at = self.line_end(at)  # "\ No newline at end of file" after the last line
        return at, counts[0], counts[1]

    def binary(self, start: int) -> int | None:
        """git's parse_binary(): the index after a `GIT binary patch` body; None if corrupt."""
        forward = self.binary_hunk(start)
        if forward is None or forward is False:
            return None
        reverse = self.binary_hunk(forward)
        if reverse is None:
            return None
        return forward if reverse is False else reverse

    def binary_hunk(self, start: int) -> int | bool | None:
        """One `literal N`/`delta N` hunk: the index after it, False if none, None if corrupt."""
        buf = self.buf
        if buf.startswith(b"delta ", start):
            size = _strtoul(buf, start + 6)
        elif buf.startswith(b"literal ", start):
            size = _strtoul(buf, start + 8)
        else:
            return False
        at = self.line_end(start)
        data = bytearray()
        while True:
            end = self.line_end(at)
            length = end - at
            if length == 1:
                at += 1
                break
            if length < 7 or (length - 2) % 5:
                return None
            most = (length - 2) // 5 * 4
            lead = buf[at]
            if 0x41 <= lead <= 0x5A:
                count = lead - 0x41 + 1
            elif 0x61 <= lead <= 0x7A:
                count = lead - 0x61 + 27
            else:
                return None
            if most < count or count <= most - 4:
                return None
            try:
                data += base64.b85decode(buf[at + 1 : end - 1])[:count]
            except ValueError:
                return None
            at = end
        return at if _inflates_to(bytes(data), size) else None

    # --- the whole patch ----------------------------------------------------------
    def read(self) -> list[FileChange]:
        at = 0
        while at < self.size:
            found = self.find_header(at)
            if found is None:
                break
            patch, body = found
            at = self.hunks(body, patch)
            if at == body:
                at = self.no_hunks(at)
            self.changes.append(
                FileChange(
                    old=self.decode(patch.old), new=self.decode(patch.new), copy=patch.is_copy
                )
            )
        if not self.changes:
            raise PatchError(
                "not a patch: git apply finds no file header in it (a `diff --git` line with "
                "its header lines, or `---`, `+++` and `@@ -` lines in a row); pass the output "
                "of `git diff --binary <base>`"
            )
        return self.changes

    def no_hunks(self, at: int) -> int:
        """After a header without text hunks: a binary body, a `Binary files` line, or nothing."""
        end = self.line_end(at)
        line = self.buf[at:end]
        if line == b"GIT binary patch\n":
            after = self.binary(end)
            if after is None:
                raise self.error(
                    end,
                    "corrupt binary patch: git apply stops reading here and silently skips "
                    "everything after it; make the patch again with `git diff --binary`",
                    git_refuses=False,
                )
            return after
        if line.endswith(b" differ\n") and line.startswith((b"Binary files ", b"Files ")):
            return end
        return at

    def decode(self, name: bytes | None) -> str | None:
        if name is None:
            return None
        if self.root and name.startswith(self.root):
            name = name[len(self.root) :]
        return name.decode("utf-8", "surrogateescape")


def _fragment_counts(line: bytes) -> tuple[int, int] | None:
    """git's parse_fragment_header() of `@@ -a,b +c,d @@`: (old, new) line counts."""
    if not line.endswith(b"\n"):
        return None
    old, at = _range(line, 4, b" +")
    if at < 0:
        return None
    new, at = _range(line, at, b" @@")
    return None if at < 0 else (old, new)


def _range(line: bytes, at: int, expect: bytes) -> tuple[int, int]:
    """git's parse_range(): the count after `at` (1 if absent) and the index after `expect`."""
    first = _DIGITS.match(line, at)
    if first is None:
        return 0, -1
    at = first.end()
    count = 1
    if line[at : at + 1] == b",":
        second = _DIGITS.match(line, at + 1)
        if second is None:
            return 0, -1
        count = min(int(second.group()), _ULONG_MAX)
        at = second.end()
    if not line.startswith(expect, at):
        return 0, -1
    return count, at + len(expect)


def _inflates_to(data: bytes, size: int) -> bool:
    """Does zlib `data` inflate to exactly `size` bytes (git's inflate_it())?"""
    stream = zlib.decompressobj()
    total = 0
    pending = data
    try:
        while True:
            chunk = stream.decompress(pending, 1 << 20)
            total += len(chunk)
            if total > size:
                return False
            if stream.eof:
                return total == size
            pending = stream.unconsumed_tail
            if not pending and not chunk:
                return False
    except zlib.error:
        return False


def _as_bytes(patch: str | bytes) -> bytes:
    if isinstance(patch, str):
        try:
            patch = patch.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as error:
            raise PatchError(
                f"not a patch: character {error.start} is a lone surrogate, which no bytes "
                "decode to; pass the patch's bytes"
            ) from None
    if len(patch) >= MAX_PATCH_BYTES:
        raise PatchError(f"the patch has {len(patch)} bytes; git apply refuses 1 GiB or more")
    nul = patch.find(b"\0")
    if nul != -1:
        raise PatchError(
            f"not a patch: byte {nul} is NUL (binary data). A text hunk of a binary file "
            "(`git diff --text`) "
            "cannot be scored; make the patch with `git diff --binary`, which writes binary "
            "files as `GIT binary patch` hunks"
        )
    return patch


def read_changes(patch: str | bytes, directory: str = "") -> list[FileChange]:
    """Every file of the patch, in order, with the names `git apply` gives it.

    `directory` is `git apply --directory`'s value, if the patch is applied with one;
    names come back relative to it. Raises PatchError for what git would not read.
    """
    data = _as_bytes(patch)
    if not data.strip():
        raise PatchError(
            "empty patch: there is nothing to score; pass the output of "
            "`git diff --binary <base>` for a change that differs from the base"
        )
    root = directory.encode("utf-8", "surrogateescape")
    if root and not root.endswith(b"/"):
        root += b"/"
    return _Reader(data, root).read()


def touched_paths(patch: str | bytes, directory: str = "") -> list[str]:
    """Repo-relative names the patch gives its files, in order of first appearance, each once.

    Both names of a file when git has two (a rename's or copy's source and target).
    Raises PatchError for an empty text, NUL bytes, or what git apply would refuse.
    """
    paths: dict[str, None] = {}
    for change in read_changes(patch, directory):
        for name in change.names():
            paths.setdefault(name, None)
    return list(paths)


def read_patch(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a patch file, checked to be one git could read (size, no NUL bytes)."""
    return _as_bytes(Path(path).read_bytes())
