"""File names from a Bazel params file, as the bytes the file system holds.

Bazel 4.2.3 holds a name as Latin-1 characters, one per byte of its UTF-8, and
its params files encode each of those characters as UTF-8 again (``café`` arrives
as ``cafÃ©``); Bazel 7.7.1 writes the name's bytes. Both versions write the
command line faithfully, but a command line cannot hold a large tree's names.

So the rule puts one non-ASCII probe string both on the command line and as the
params file's first line. Comparing the two says which of the two writings this
Bazel used, and the names are decoded accordingly. Any other difference is an
error: the names could not be read back faithfully, so nothing is sealed.
"""

from __future__ import annotations

from pathlib import Path


class ParamsError(Exception):
    """A params file whose names cannot be read back as the original bytes."""


def _undo_double_encoding(line: bytes) -> bytes:
    # Each byte of the name became one character, written as UTF-8; every such
    # character is below U+0100, so Latin-1 gives the byte back.
    return line.decode("utf-8").encode("latin-1")


def decode_names(params: bytes, probe: bytes) -> list[bytes]:
    """The names of a multiline params file whose first line is `probe` as Bazel wrote it.

    `probe` is the same string as the command line delivered it (the original bytes).
    """
    if not probe or probe.isascii():
        raise ParamsError("the probe must be a non-ASCII string, or it cannot tell encodings apart")
    lines = params.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the file's final newline
    if not lines:
        raise ParamsError("the params file is empty: it lacks the probe line")
    written_probe, names = lines[0], lines[1:]
    if written_probe == probe:
        return names
    try:
        double_encoded = _undo_double_encoding(written_probe) == probe
    except (UnicodeDecodeError, UnicodeEncodeError):
        double_encoded = False
    if not double_encoded:
        raise ParamsError(
            f"this Bazel wrote the probe {probe!r} into the params file as {written_probe!r}, "
            "neither as is nor UTF-8-encoded twice, so file names cannot be read back "
            "faithfully; report it with `bazel --version`"
        )
    decoded: list[bytes] = []
    for line in names:
        try:
            decoded.append(_undo_double_encoding(line))
        except (UnicodeDecodeError, UnicodeEncodeError) as error:
            raise ParamsError(
                f"params file line {line!r} is not a name written as UTF-8-encoded Latin-1, "
                f"as the probe line was: {error}"
            ) from None
    return decoded


def read_names(path: Path, probe: bytes) -> list[bytes]:
    """`decode_names` of the params file at `path`."""
    try:
        params = path.read_bytes()
    except OSError as error:
        raise ParamsError(f"{path}: cannot read params file: {error.strerror or error}") from None
    return decode_names(params, probe)
