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

Large trees are sealed in parallel by splitting them into disjoint units: a
directory (walked recursively) or a single file. In the sorted listing the lines of
a directory unit form one contiguous block, since they all start with ``dir/`` and no
other unit's path does. So the listing is the units sorted by key (``dir/`` for a
directory, the path itself for a file) with each unit's own lines sorted inside it,
and a run of consecutive units is again one block. The parent lists the top of the
tree breadth-first into units; worker processes turn runs of units into finished
blocks of lines; the parent feeds the blocks to the outer hash in key order. Workers
are forked processes, not threads: the per-file work is Python, which threads cannot
run on two cores at once. A worker that dies fails the seal; it never changes it.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import mmap
import os
import re
import stat
import sys
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from agent_gate.formats import forkpool

_CHUNK = 1 << 20  # 1 MiB reads: few syscalls for a big file
# The first read of every file: most fixture files fit, so one read is the whole file.
# A multiple of the page size, as an mmap offset must be.
_HEAD = 64 * 1024
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_SEAL_SUFFIX = b".seal"
_ESCAPED_BY_SHA256SUM = (b"\\", b"\n", b"\r")
_SEAL_LINE = re.compile(r"([0-9a-f]{64})(  -)?\n?")
_UPDATE_HINT = (
    "rewrite it with the sealed_fixtures target's .update_seal (bazel run //PKG:NAME.update_seal)"
)
# A tree this small is sealed in this process: starting workers would cost more.
_SERIAL_MAX_FILES = 2048
_SERIAL_MAX_BYTES = 32 << 20
# Directories the parent lists itself before handing the rest of the tree to workers.
_LIST_BUDGET = 256
# Tasks per worker: enough that the last ones finish close together, few enough that
# per-task overhead stays small.
_TASKS_PER_WORKER = 32
_WORKER_DIED = (
    "a hashing worker process died ({how}) before finishing, so there is no seal: "
    "re-run; a file may have changed while being read, so make sure nothing writes to "
    "the tree while it is sealed"
)


class SealError(Exception):
    """A tree or seal file that cannot be sealed or read faithfully."""


# (Not typing.NamedTuple: importing typing would cost every seal ~4 ms.)
class _Unit(namedtuple("_Unit", "key shown fs is_dir")):
    """A disjoint part of the tree: one file, or a directory walked recursively.

    ``key`` (bytes) orders the unit's block: the shown path, plus "/" for a directory;
    ``shown`` (bytes) is the path as find prints it, ``fs`` (bytes) the path to open.
    """

    __slots__ = ()


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


def _check_names(shown: list[bytes]) -> None:
    # One scan of all names ('/' joins them: it is in every path and never refused);
    # only a hit pays for finding which name it was.
    names = b"/".join(shown)
    if any(bad in names for bad in _ESCAPED_BY_SHA256SUM):
        for path in shown:
            _check_name(path)


# What no Bazel lane takes in a label (control characters, ':'), found in one scan.
_REFUSED_BY_BAZEL = re.compile(rb"[\x00-\x1f\x7f:]")


def _bazel_refusal(path: bytes) -> str | None:
    """Why no Bazel action can seal a file of this name, which the pipeline would hash.

    Bazel refuses control characters and ':' in a label when it loads the package;
    a name that is not UTF-8 is a missing input to Bazel 4.2.3 and silently left out
    of globs by Bazel 7.7.1, whose seal would then miss the file.
    """
    found = _REFUSED_BY_BAZEL.search(path)
    if found:
        return f"contains {found.group().decode()!r}, which Bazel refuses in a label"
    try:
        path.decode("utf-8")
    except UnicodeDecodeError:
        return "is not UTF-8, which Bazel cannot stage as an action input"
    return None


def _check_bazel_names(shown: list[bytes]) -> None:
    # One scan of all names, as in _check_names; only a hit looks at each name.
    if _bazel_refusal(b"/".join(shown)) is None:
        return
    for path in shown:
        why = _bazel_refusal(path)
        if why:
            raise SealError(
                f"{_display(path)!r}: file name {why}, so no Bazel action can seal this "
                "tree; rename the file"
            )


def _is_seal_name(path: bytes) -> bool:
    # find -name matches the base name; a trailing slash never names a regular file.
    return path.rstrip(b"/").rsplit(b"/", 1)[-1].endswith(_SEAL_SUFFIX)


def _read_rest(fd: int, digest: hashlib._Hash, buf: bytearray) -> None:
    view = memoryview(buf)
    while n := os.readv(fd, [buf]):
        digest.update(view[:n])


def _map_rest(fd: int, digest: hashlib._Hash, buf: bytearray) -> None:
    """Hash a file from `_HEAD` on through mmap, which saves copying it (~1.5%).

    Only in a worker process: a file shrinking while mapped raises SIGBUS, which kills
    just the worker, and so becomes a SealError instead of a wrong seal.
    """
    size = os.fstat(fd).st_size
    if size > _HEAD:
        with mmap.mmap(fd, size - _HEAD, prot=mmap.PROT_READ, offset=_HEAD) as mapped:
            digest.update(mapped)
        os.lseek(fd, size, os.SEEK_SET)
    _read_rest(fd, digest, buf)  # anything appended since the fstat, to the real end


def _file_hex(fs: bytes, shown: bytes, buf: bytearray, mapped: bool) -> bytes:
    """Hex sha256 of a file: open, one read, close for most files; no stat, no file object.

    A read of a regular file returns less than asked for only at the end of the file.
    """
    try:
        fd = os.open(fs, os.O_RDONLY)
        try:
            head = os.read(fd, _HEAD)
            digest = hashlib.sha256(head)
            if len(head) == _HEAD:
                (_map_rest if mapped else _read_rest)(fd, digest, buf)
        finally:
            os.close(fd)
    except OSError as err:
        raise SealError(f"{_display(shown)}: cannot read: {err.strerror or err}") from err
    return digest.hexdigest().encode()


def _list_dir(
    dir_shown: bytes,
    dir_fs: bytes,
    files: list[tuple[bytes, bytes]],
    dirs: list[tuple[bytes, bytes]],
) -> int:
    """Append a directory's regular files and subdirectories, as (shown, fs) pairs.

    The listing gives each entry's type, so nothing is stat'ed. Returns the entry count.
    """
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
                dirs.append((shown, child.path))
            elif child.is_file(follow_symlinks=False) and not child.name.endswith(_SEAL_SUFFIX):
                files.append((shown, child.path))
        except OSError as err:
            raise SealError(f"{_display(shown)}: cannot stat: {err.strerror or err}") from err
    return len(children)


def _unit_files(unit: _Unit) -> list[tuple[bytes, bytes]]:
    """A unit's regular files as (shown, fs), sorted by shown path."""
    if not unit.is_dir:
        return [(unit.shown, unit.fs)]
    files: list[tuple[bytes, bytes]] = []
    stack = [(unit.shown, unit.fs)]  # an explicit stack survives deep trees
    while stack:
        _list_dir(*stack.pop(), files, stack)
    files.sort()  # shown paths are unique, so this sorts by them alone
    return files


def _seal_block(units: Sequence[_Unit], mapped: bool = False, bazel_names: bool = False) -> bytes:
    """The finished lines of consecutive units in key order: one block of the listing."""
    files = [pair for unit in units for pair in _unit_files(unit)]
    _check_names([shown for shown, _ in files])
    if bazel_names:
        _check_bazel_names([shown for shown, _ in files])
    buf = bytearray(_CHUNK)
    return b"".join(
        [_file_hex(fs, shown, buf, mapped) + b"  " + shown + b"\n" for shown, fs in files]
    )


def _default_workers() -> int:
    # Hashing is CPU-bound once pages are cached: one process per usable core.
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(32, cores))


def _worker_count(workers: int | None) -> int:
    count = workers if workers is not None else _default_workers()
    if count < 1:
        raise SealError(f"workers must be at least 1, got {count}")
    return count if forkpool.available() else 1  # else seal in this process


def _is_small(files: int, size: Callable[[], int]) -> bool:
    # `size` is only asked for when the file count is small: it may stat every file.
    return files <= _SERIAL_MAX_FILES and size() <= _SERIAL_MAX_BYTES


def _partition(start_shown: bytes, start_fs: bytes, tasks: int) -> tuple[list[_Unit], int]:
    """Units covering a directory's tree, listed breadth-first a whole level at a time.

    Listing stops once a level has a directory per task and the tree is known not to
    be small, or at the budget; the unlisted directories of the last level become
    directory units, so units below the top are of similar depth, hence similar cost.
    Returns the units and the mean entries per listed directory (0: all listed).
    """
    files: list[tuple[bytes, bytes]] = []
    level = [(start_shown, start_fs)]
    listed = entries = 0
    while (
        level
        and listed + len(level) <= _LIST_BUDGET
        and (len(level) < tasks or entries <= _SERIAL_MAX_FILES)
    ):
        deeper: list[tuple[bytes, bytes]] = []
        for shown, fs in level:
            entries += _list_dir(shown, fs, files, deeper)
        listed += len(level)
        level = deeper
    units = [_Unit(shown, shown, fs, False) for shown, fs in files]
    units += [_Unit(shown + b"/", shown, fs, True) for shown, fs in level]
    return units, (max(1, entries // max(1, listed)) if level else 0)


def _tasks(units: list[_Unit], dir_weight: int, count: int) -> list[list[_Unit]]:
    """Cut key-sorted units into at most `count` + 1 runs of similar guessed cost.

    Each run is one block, so a worker returns it whole. Nothing was stat'ed: a file
    counts 1 and an unlisted directory `dir_weight`, the mean entries per directory.
    """
    weights = [dir_weight if unit.is_dir else 1 for unit in units]
    share = sum(weights) / count
    tasks: list[list[_Unit]] = []
    current: list[_Unit] = []
    load = 0
    for unit, weight in zip(units, weights, strict=True):
        current.append(unit)
        load += weight
        if load >= share:
            tasks.append(current)
            current, load = [], 0
    if current:
        tasks.append(current)
    return tasks


def _worker_blocks(tasks: list[list[_Unit]], workers: int, bazel_names: bool) -> Iterator[bytes]:
    """The blocks of `tasks` in order, from forked worker processes."""
    # mapped: in a worker, where mmap is safe
    produce = functools.partial(_seal_block, mapped=True, bazel_names=bazel_names)
    try:
        yield from forkpool.ordered_results(tasks, produce, workers, SealError)
    except forkpool.WorkerDied as err:
        raise SealError(_WORKER_DIED.format(how=err.how)) from err
    except OSError as err:
        raise SealError(f"cannot run hashing workers: {err.strerror or err}") from err


def _digest_units(
    units: list[_Unit], workers: int, dir_weight: int = 1, bazel_names: bool = False
) -> str:
    """Seal the files of `units`, with `workers` processes (1: in this process)."""
    # Keys are unique, so units sort by them: bytewise, as `LC_ALL=C sort -z`.
    units.sort()
    if workers == 1 or not units:
        blocks: Iterable[bytes] = [_seal_block(units, bazel_names=bazel_names)]
    else:
        count = min(workers * _TASKS_PER_WORKER, forkpool.MAX_TASKS - 1)  # _tasks may cut one more
        blocks = _worker_blocks(_tasks(units, dir_weight, count), workers, bazel_names)
    outer = hashlib.sha256()
    sealed = 0
    for block in blocks:
        outer.update(block)
        sealed += len(block)
    if not sealed:
        outer.update(seal_line(_EMPTY_SHA256).encode())
    return outer.hexdigest()


def _seal_dir(start_shown: bytes, start_fs: bytes, workers: int, bazel_names: bool) -> str:
    if workers == 1:
        whole = [_Unit(start_shown + b"/", start_shown, start_fs, True)]
        return _digest_units(whole, 1, bazel_names=bazel_names)
    units, dir_weight = _partition(start_shown, start_fs, workers * _TASKS_PER_WORKER)
    if not dir_weight and _is_small(  # all listed, and small
        len(units), lambda: sum(os.lstat(unit.fs).st_size for unit in units)
    ):
        workers = 1
    return _digest_units(units, workers, dir_weight, bazel_names)


def seal_tree(
    repo_root: Path, tree: str, workers: int | None = None, bazel_names: bool = False
) -> str:
    """Hex seal of ``tree`` (spelled as given, relative to ``repo_root``).

    With ``bazel_names``, names no Bazel action can seal are refused too.
    """
    if not tree:
        raise SealError("empty tree path: name a directory relative to the repo root")
    count = _worker_count(workers)
    shown = os.fsencode(tree)
    # os.path.join keeps a trailing slash, which (like find) resolves a symlinked start.
    start_fs = os.path.join(os.fsencode(repo_root), shown)
    try:
        info = os.lstat(start_fs)
    except OSError as err:
        raise SealError(f"{tree}: cannot seal: {err.strerror or err}") from err
    if stat.S_ISDIR(info.st_mode):
        # find joins with "/" unless the start already ends in one.
        start = shown[:-1] if shown.endswith(b"/") else shown
        return _seal_dir(start, start_fs, count, bazel_names)
    units = []
    if stat.S_ISREG(info.st_mode) and not _is_seal_name(shown):
        units.append(_Unit(shown, shown, start_fs, False))
    return _digest_units(units, 1, bazel_names=bazel_names)


def seal_files(
    repo_root: Path, rel_paths: Iterable[str | bytes], workers: int | None = None
) -> str:
    """Seal of an explicit list of repo-relative files, e.g. a Bazel action's inputs.

    Names are bytes (a str is encoded as the file system would). Symlinks are
    followed here because a sandbox stages inputs as symlinks; the caller lists the
    files the tree holds. Duplicates count once, as with find.
    """
    count = _worker_count(workers)
    root = os.fsencode(repo_root)
    units: list[_Unit] = []
    size = 0
    # sorted: the same error first every time
    for shown in sorted({os.fsencode(rel) for rel in rel_paths}):
        if not shown or shown.startswith(b"/"):
            raise SealError(f"{_display(shown)!r}: expected a repo-relative file path")
        if _is_seal_name(shown):
            continue
        fs_path = os.path.join(root, shown)
        try:
            info = os.stat(fs_path)
        except OSError as err:
            raise SealError(f"{_display(shown)}: cannot seal: {err.strerror or err}") from err
        if not stat.S_ISREG(info.st_mode):
            raise SealError(
                f"{_display(shown)}: not a regular file; list only the files of the tree"
            )
        units.append(_Unit(shown, shown, fs_path, False))
        size += info.st_size
    return _digest_units(units, 1 if _is_small(len(units), lambda: size) else count)


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
    """``python -m agent_gate.formats.seal DIR [--repo-root R]``: print the seal line."""
    parser = argparse.ArgumentParser(
        prog="agent_gate.formats.seal",
        description="Print the fixture seal of DIR, as the coreutils pipeline would.",
    )
    parser.add_argument("tree", metavar="DIR", help="tree to seal, relative to the repo root")
    parser.add_argument("--repo-root", type=Path, default=Path.cwd(), help="default: cwd")
    parser.add_argument(
        "--workers", type=int, default=None, help="hashing processes (1: all in this process)"
    )
    args = parser.parse_args(argv)
    try:
        digest = seal_tree(args.repo_root, args.tree, workers=args.workers)
    except SealError as err:
        print(f"agent_gate.formats.seal: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(seal_line(digest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
