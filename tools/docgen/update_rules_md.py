"""Rewrites the generated blocks of docs/rules.md from the docstrings of rules/*.bzl.

Run: bazel run //tools/docgen:update_rules_md
(tests/unit/docs/rules_md_test.py fails until the checked-in file is what this writes.)

On a Bazel with `starlark_doc_extract` (>= 7) the target passes one
`--module_info=FILE` per extracted file (tools/docgen/module_info.bzl), and the
reference is read from Bazel's own extraction; elsewhere from the syntax trees.
Both write the same file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from docgen.module_info import read_module_infos
from docgen.starlark_doc import DocError, Reference, fill, read_syntax_trees
from runfiles import runfiles

# The public .bzl files: what users load. Their private dependencies are followed
# through load().
PUBLIC = (
    "rules/defs.bzl",
    "rules/providers.bzl",
    "rules/repositories.bzl",
    "rules/settings.bzl",
)
DOC = "docs/rules.md"
REGENERATE = "bazel run //tools/docgen:update_rules_md"


def reference(root: Path, module_infos: Sequence[Path]) -> Reference:
    """The reference of the rules under `root`: from Bazel's ModuleInfo files when given."""
    if not module_infos:
        return read_syntax_trees(root, PUBLIC)
    texts = [path.read_text(encoding="utf-8") for path in module_infos]
    return read_module_infos(root, texts, PUBLIC)


def expected(root: Path, module_infos: Sequence[Path] = ()) -> str:
    """docs/rules.md under `root` with every generated block regenerated."""
    template = (root / DOC).read_text(encoding="utf-8")
    return fill(template, reference(root, module_infos), REGENERATE)


def runfile(rlocation_path: str) -> Path:
    """A `$(rlocationpath)` argument as a file of this program's runfiles."""
    found = runfiles.Create().Rlocation(rlocation_path)
    if not found or not Path(found).is_file():
        raise DocError(f"{rlocation_path} is not in the runfiles; is it in `data`?")
    return Path(found)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module_info", action="append", default=[], metavar="RLOCATIONPATH")
    arguments = parser.parse_args(argv)
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    if not workspace:
        print(f"run me with `{REGENERATE}` (it writes into the workspace)", file=sys.stderr)
        return 2
    root = Path(workspace)
    try:
        text = expected(root, [runfile(path) for path in arguments.module_info])
    except (DocError, OSError) as err:
        print(f"{DOC} not written: {err}", file=sys.stderr)
        return 1
    if (root / DOC).read_text(encoding="utf-8") == text:
        print(f"{DOC} is up to date")
        return 0
    (root / DOC).write_text(text, encoding="utf-8")
    print(f"rewrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
