"""The output base's repositories agent_gate provides, checked before each score.

Bazel never re-reads a fetched repository it believes up to date, so a file of
`@agent_gate_python` (the Python toolchain every gate action runs) or of a shim
rewritten in the output base would judge every later patch. Actions cannot write
there (they run sandboxed, the output base read-only); this is the second lock.
After each trusted build of the base the CLI records a digest of those
repositories; before the next score it compares. A repository that changed in
between is deleted, with its marker, and the server shut down, so Bazel
regenerates it from agent_gate's own rules before anything is judged.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from agent_gate.drive import worktree

# The repositories agent_gate_dependencies() declares (rules/repositories.bzl).
PROVIDED = (
    "agent_gate_python",
    "pypi",
    "rules_python",
    "rules_shell",
    "rules_cc",
    "remote_coverage_tools",
    "com_google_protobuf",
)


def _tree_digest(root: Path) -> str:
    """sha256 over a directory's names, file contents and symlink targets; "" if absent."""
    if not root.is_dir():
        return ""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]):
            path = Path(folder) / name
            digest.update(os.fsencode(path.relative_to(root)) + b"\0")
            if path.is_symlink():
                digest.update(b"link\0" + os.fsencode(os.readlink(path)) + b"\0")
            else:
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def digests(output_base: Path, names: Iterable[str] = PROVIDED) -> dict[str, str]:
    """Each provided repository's digest (its tree and its marker file); "" when not fetched."""
    found: dict[str, str] = {}
    external = output_base / "external"
    for name in names:
        tree = _tree_digest(external / name)
        marker = external / f"@{name}.marker"
        if tree and marker.is_file():
            tree = hashlib.sha256((tree + marker.read_text(errors="replace")).encode()).hexdigest()
        found[name] = tree
    return found


def record(output_base: Path, state_file: Path) -> None:
    """Remember the digests as they are after a trusted build of the base."""
    state_file.parent.mkdir(parents=True, exist_ok=True)
    partial = state_file.with_name(state_file.name + ".partial")
    partial.write_text(json.dumps(digests(output_base), sort_keys=True), encoding="utf-8")
    os.replace(partial, state_file)


def tampered(output_base: Path, state_file: Path) -> list[str]:
    """Provided repositories that changed since `record`; each is deleted with its marker."""
    try:
        before = json.loads(state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # nothing recorded yet: the first score's build fetches them fresh
    now = digests(output_base, before)
    changed = [name for name, value in before.items() if value and now.get(name) != value]
    external = output_base / "external"
    for name in changed:
        worktree.remove_tree(external / name)
        (external / f"@{name}.marker").unlink(missing_ok=True)
    return changed
