"""The fixture seal: a tree digest anyone can recompute with coreutils.

The digest is byte-for-byte what this pipeline prints, run from the repo root:

    find DIR -type f ! -name '*.seal' -print0 | LC_ALL=C sort -z \\
        | xargs -0 sha256sum | sha256sum

That is sha256 over the lines ``<hex sha256 of file>  <path as find prints it>\\n``
sorted by path bytes. Two details of the pipeline are reproduced on purpose:

* ``find`` prints ``DIR`` as given followed by ``/name`` unless ``DIR`` already ends
  in a slash (``find d/`` prints ``d/x``, ``find d//`` prints ``d//x``), does not
  follow symlinks (a symlink, even to a file, is not ``-type f``) and matches
  ``-name`` against the base name;
* with no files, GNU ``xargs`` still runs ``sha256sum`` once on an empty stdin, so
  the empty tree seals the single line ``<sha256 of nothing>  -\\n``.

``sha256sum`` escapes names holding a backslash, a newline or (coreutils >= 9) a
carriage return; such names are refused rather than sealed in a way another
coreutils version would not reproduce.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import stat
import sys
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_CHUNK = 1 << 20  # 1 MiB reads: few syscalls, and hashlib drops the GIL per update.
_BATCH_BYTES = 4 * _CHUNK
_BATCH_FILES = 256
# Below this size a file costs more in per-file Python work than in hashing, and
# threads would only contend for the GIL over it.
_PARALLEL_MIN_SIZE = 64 * 1024
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_SEAL_SUFFIX = b".seal"
_ESCAPED_BY_SHA256SUM = (b"\\", b"\n", b"\r")
_SEAL_LINE = re.compile(r"([0-9a-f]{64})(  -)?\n?")
_UPDATE_HINT = (
    "rewrite it with the sealed_fixtures target's .update_seal (bazel run //PKG:NAME.update_seal)"
)


class SealError(Exception):
    """A tree or seal file that cannot be sealed or read faithfully."""


def seal_line(digest: str) -> str:
    """The line the coreutils pipeline prints (and a committed seal file holds)."""
    return f"{digest}  -\n"


def _display(path: bytes) -> str:
    return os.fsdecode(path)


def _check_name(path: bytes) -> None:
    for bad in _ESCAPED_BY_SHA256SUM:
        if bad in path:
            raise SealError(
                f"{_display(path)!r}: file name contains {bad.decode()!r}, which sha256sum "
                "escapes, so the seal would not match the coreutils pipeline; rename the file"
            )


def _is_seal_name(path: bytes) -> bool:
    # find -name matches the base name; a trailing slash never names a regular file.
    return path.rstrip(b"/").rsplit(b"/", 1)[-1].endswith(_SEAL_SUFFIX)


_local = threading.local()


def _buffer() -> bytearray:
    # One buffer per thread: allocating 1 MiB per small file would dominate the cost.
    buf = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = bytearray(_CHUNK)
    return buf


def _hash_small(path: bytes, size: int) -> str:
    """A file smaller than one chunk: open, one read, close; no file object.

    Asking for one byte more than the listed size and getting exactly the size means
    end of file; any other count (the file changed) reads on to the real end.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            chunks = [os.read(fd, size + 1)]
            if len(chunks[0]) != size:
                while chunk := os.read(fd, _CHUNK):
                    chunks.append(chunk)
        finally:
            os.close(fd)
    except OSError as err:
        raise SealError(f"{_display(path)}: cannot read: {err.strerror or err}") from err
    return hashlib.sha256(b"".join(chunks)).hexdigest()


def _hash_file(path: bytes, size: int) -> str:
    if size < _CHUNK:
        # Most fixture files are small: a file object per file would cost more than its hash.
        return _hash_small(path, size)
    digest = hashlib.sha256()
    buf = _buffer()
    view = memoryview(buf)
    try:
        with open(path, "rb", buffering=0) as handle:
            while n := handle.readinto(buf):
                digest.update(view[:n])
    except OSError as err:
        raise SealError(f"{_display(path)}: cannot read: {err.strerror or err}") from err
    return digest.hexdigest()


def _default_workers() -> int:
    # Hashing is CPU-bound once pages are cached: one thread per usable core.
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(32, cores))


def _batches(sizes: list[int], indices: Iterable[int]) -> list[list[int]]:
    """Group entry indices into tasks: big files alone, the rest by the hundred.

    Largest first, so a big file never starts last and serialises the tail; smaller
    files share a task because per-task overhead would otherwise dominate.
    """
    order = sorted(indices, key=sizes.__getitem__, reverse=True)
    batches: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i in order:
        current.append(i)
        size += sizes[i]
        if size >= _BATCH_BYTES or len(current) >= _BATCH_FILES:
            batches.append(current)
            current, size = [], 0
    if current:
        batches.append(current)
    return batches


def _check_names(entries: list[tuple[bytes, bytes, int]]) -> None:
    # One scan of all names ('/' joins them: it is in every path and never refused);
    # only a hit pays for finding which name it was.
    names = b"/".join([shown for shown, _, _ in entries])
    if any(bad in names for bad in _ESCAPED_BY_SHA256SUM):
        for shown, _, _ in entries:
            _check_name(shown)


def _hash_all(entries: list[tuple[bytes, bytes, int]], count: int) -> list[str]:
    """Hex digest of every entry's file, in entry order.

    Files of `_PARALLEL_MIN_SIZE` bytes or more go to `count` threads (reading and
    hashing them releases the GIL); smaller ones are hashed by this thread in the
    meantime: their cost is per-file Python work, which threads would only contend for.
    """
    sizes = [size for _, _, size in entries]
    big = [i for i, size in enumerate(sizes) if size >= _PARALLEL_MIN_SIZE]
    if count == 1 or not big:
        return [_hash_file(path, size) for _, path, size in entries]
    digests = [""] * len(entries)
    batches = _batches(sizes, big)
    with ThreadPoolExecutor(max_workers=min(count, len(batches))) as pool:
        done = pool.map(
            lambda batch: [_hash_file(entries[i][1], entries[i][2]) for i in batch], batches
        )
        for i, (_, path, size) in enumerate(entries):
            if size < _PARALLEL_MIN_SIZE:
                digests[i] = _hash_file(path, size)
        for batch, hashed in zip(batches, done, strict=True):
            for i, hex_digest in zip(batch, hashed, strict=True):
                digests[i] = hex_digest
    return digests


def _digest_entries(entries: list[tuple[bytes, bytes, int]], workers: int | None) -> str:
    """Seal (display path, filesystem path, size) entries as the pipeline would."""
    # Display paths are unique, so tuples sort by them: bytewise, as `LC_ALL=C sort -z`.
    entries = sorted(entries)
    _check_names(entries)
    count = workers if workers is not None else _default_workers()
    if count < 1:
        raise SealError(f"workers must be at least 1, got {count}")
    digests = _hash_all(entries, count)
    outer = hashlib.sha256()
    if not entries:
        outer.update(seal_line(_EMPTY_SHA256).encode())
    step = 4096  # hash the listing a few thousand lines at a time, not line by line
    for start in range(0, len(entries), step):
        outer.update(
            b"".join(
                [
                    hex_digest.encode() + b"  " + shown + b"\n"
                    for (shown, _, _), hex_digest in zip(
                        entries[start : start + step], digests[start : start + step], strict=True
                    )
                ]
            )
        )
    return outer.hexdigest()


def _walk(start_fs: bytes, start_shown: bytes, out: list[tuple[bytes, bytes, int]]) -> None:
    """Collect regular files below a directory; an explicit stack survives deep trees."""
    stack = [(start_fs, start_shown)]
    while stack:
        dir_fs, dir_shown = stack.pop()
        try:
            with os.scandir(dir_fs) as it:
                children = list(it)
        except OSError as err:
            raise SealError(
                f"{_display(dir_shown)}: cannot list directory: {err.strerror or err}"
            ) from err
        for child in children:
            shown = dir_shown + b"/" + child.name
            try:
                if child.is_dir(follow_symlinks=False):
                    stack.append((child.path, shown))
                elif child.is_file(follow_symlinks=False) and not child.name.endswith(_SEAL_SUFFIX):
                    out.append((shown, child.path, child.stat(follow_symlinks=False).st_size))
            except OSError as err:
                raise SealError(f"{_display(shown)}: cannot stat: {err.strerror or err}") from err


def seal_tree(repo_root: Path, tree: str, workers: int | None = None) -> str:
    """Hex seal of ``tree`` (spelled as given, relative to ``repo_root``)."""
    if not tree:
        raise SealError("empty tree path: name a directory relative to the repo root")
    shown = os.fsencode(tree)
    # os.path.join keeps a trailing slash, which (like find) resolves a symlinked start.
    start_fs = os.path.join(os.fsencode(repo_root), shown)
    try:
        info = os.lstat(start_fs)
    except OSError as err:
        raise SealError(f"{tree}: cannot seal: {err.strerror or err}") from err
    entries: list[tuple[bytes, bytes, int]] = []
    if stat.S_ISDIR(info.st_mode):
        # find joins with "/" unless the start already ends in one.
        prefix = shown[:-1] if shown.endswith(b"/") else shown
        _walk(start_fs, prefix, entries)
    elif stat.S_ISREG(info.st_mode) and not _is_seal_name(shown):
        entries.append((shown, start_fs, info.st_size))
    return _digest_entries(entries, workers)


def seal_files(repo_root: Path, rel_paths: Iterable[str], workers: int | None = None) -> str:
    """Seal of an explicit list of repo-relative files, e.g. a Bazel action's inputs.

    Symlinks are followed here because a sandbox stages inputs as symlinks; the
    caller lists the files the tree holds. Duplicates count once, as with find.
    """
    root = os.fsencode(repo_root)
    entries: list[tuple[bytes, bytes, int]] = []
    for rel in sorted(set(rel_paths)):
        shown = os.fsencode(rel)
        if not rel or rel.startswith("/"):
            raise SealError(f"{rel!r}: expected a repo-relative file path")
        if _is_seal_name(shown):
            continue
        fs_path = os.path.join(root, shown)
        try:
            info = os.stat(fs_path)
        except OSError as err:
            raise SealError(f"{rel}: cannot seal: {err.strerror or err}") from err
        if not stat.S_ISREG(info.st_mode):
            raise SealError(f"{rel}: not a regular file; list only the files of the tree")
        entries.append((shown, fs_path, info.st_size))
    return _digest_entries(entries, workers)


def read_seal_file(path: Path) -> str:
    """The hex digest a committed seal file holds (``<hex>  -`` or bare hex)."""
    try:
        text = path.read_text(encoding="ascii")
    except UnicodeDecodeError as err:
        raise SealError(
            f"{path}: not a seal file: expected one line '<64 lowercase hex>  -' "
            f"(or a bare 64-hex digest) but found non-ASCII bytes; {_UPDATE_HINT}"
        ) from err
    except OSError as err:
        raise SealError(
            f"{path}: cannot read seal file: {err.strerror or err}; {_UPDATE_HINT}"
        ) from err
    match = _SEAL_LINE.fullmatch(text)
    if match is None:
        shown = text[:80] + ("..." if len(text) > 80 else "")
        raise SealError(
            f"{path}: not a seal file: expected one line '<64 lowercase hex>  -' "
            f"(or a bare 64-hex digest), found {shown!r}; {_UPDATE_HINT}"
        )
    return match.group(1)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agent_gate.seal DIR [--repo-root R]``: print the seal line."""
    parser = argparse.ArgumentParser(
        prog="agent_gate.seal",
        description="Print the fixture seal of DIR, as the coreutils pipeline would.",
    )
    parser.add_argument("tree", metavar="DIR", help="tree to seal, relative to the repo root")
    parser.add_argument("--repo-root", type=Path, default=Path.cwd(), help="default: cwd")
    parser.add_argument("--workers", type=int, default=None, help="hashing threads")
    args = parser.parse_args(argv)
    try:
        digest = seal_tree(args.repo_root, args.tree, workers=args.workers)
    except SealError as err:
        print(f"agent_gate.seal: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(seal_line(digest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
