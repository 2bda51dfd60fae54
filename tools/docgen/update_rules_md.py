"""Rewrites the generated blocks of docs/rules.md from the docstrings of rules/*.bzl.

Run: bazel run //tools/docgen:update_rules_md
(tests/unit/docs/rules_md_test.py fails until the checked-in file is what this writes.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from docgen.starlark_doc import DocError, fill

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


def expected(root: Path) -> str:
    """docs/rules.md under `root` with every generated block regenerated from `root`."""
    template = (root / DOC).read_text(encoding="utf-8")
    return fill(template, root, PUBLIC, REGENERATE)


def main() -> int:
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    if not workspace:
        print(f"run me with `{REGENERATE}` (it writes into the workspace)", file=sys.stderr)
        return 2
    root = Path(workspace)
    try:
        text = expected(root)
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
    sys.exit(main())
