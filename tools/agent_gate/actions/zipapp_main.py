"""Entry point of the PythonZipapp action: modules and their bytecode in one archive.

Arguments: `--out ARCHIVE`, `--main MODULE`, then `--module NAME SOURCE` for each
module of agent_gate and `--site_module NAME SOURCE` for each of a pip package,
NAME being its path in the archive (`agent_gate/core/quorum.py`). It imports
nothing of agent_gate: it packs it.

The archive is the same bytes for the same sources: fixed timestamps and modes,
sorted names. Each `.pyc` sits beside its source, where zipimport looks, and
holds a hash of that source, so zipimport checks it on import and compiles the
source instead if the bytes or the interpreter differ. A directory of
agent_gate's without an `__init__.py` gets an empty one: its package is never a
namespace portion that a regular package of the same name elsewhere on the path
would take over. A pip package's directories stay as they are: protobuf's
`google` is a namespace package whose native part stays outside the archive.
"""

from __future__ import annotations

import argparse
import py_compile
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def _entry(name: str, mode: int = 0o644) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.external_attr = mode << 16
    return info


def _bytecode(source: bytes, name: str, scratch: Path) -> bytes:
    """The checked-hash `.pyc` of `source`, whose tracebacks name `name`."""
    staged = scratch / "module.py"
    staged.write_bytes(source)
    compiled = scratch / "module.pyc"
    py_compile.compile(
        str(staged),
        cfile=str(compiled),
        dfile=name,
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
    )
    return compiled.read_bytes()


def _directories(names: Iterable[str]) -> set[str]:
    return {
        str(parent)
        for name in names
        for parent in PurePosixPath(name).parents
        if str(parent) != "."
    }


def pack(
    out: Path, main: str, modules: dict[str, bytes], site_modules: dict[str, bytes] | None = None
) -> None:
    """Write the archive: `modules` get an `__init__.py` in every directory without one;
    `site_modules` (pip packages) go in as they are, their namespace packages too."""
    site_modules = site_modules or {}
    for name in ("__main__.py", *(set(modules) & set(site_modules))):
        if name in modules or name in site_modules:
            raise ValueError(f"two modules of the archive would be {name}")
    shared = _directories(modules) & _directories(site_modules)
    if shared:
        # Its `__init__.py` would hide a pip package's namespace package.
        raise ValueError(f"a module of this repository and a pip package share {min(shared)}/")
    sources = dict(site_modules)
    sources.update(modules)
    sources.update(
        (f"{directory}/__init__.py", b"")
        for directory in _directories(modules)
        if f"{directory}/__init__.py" not in modules
    )
    sources["__main__.py"] = (
        f"import runpy\nrunpy.run_module({main!r}, run_name='__main__', alter_sys=True)\n".encode()
    )
    scratch = tempfile.TemporaryDirectory()
    with scratch, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        # Directory entries: without them Python 3.11's zipimport finds no
        # namespace package (protobuf's `google`) in the archive.
        for directory in sorted(_directories(sources)):
            archive.writestr(_entry(directory + "/", 0o755), b"")
        for name in sorted(sources):
            archive.writestr(_entry(name), sources[name])
            archive.writestr(_entry(name + "c"), _bytecode(sources[name], name, Path(scratch.name)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="zipapp", allow_abbrev=False)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--main", required=True)
    for flag in ("--module", "--site_module"):
        parser.add_argument(flag, nargs=2, action="append", default=[], metavar=("NAME", "SOURCE"))
    args = parser.parse_args(argv)
    try:
        pack(
            args.out,
            args.main,
            {name: Path(source).read_bytes() for name, source in args.module},
            {name: Path(source).read_bytes() for name, source in args.site_module},
        )
    except (OSError, ValueError, py_compile.PyCompileError) as error:
        print(f"zipapp: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
