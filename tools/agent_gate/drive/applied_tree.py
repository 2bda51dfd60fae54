"""Guards that read the applied tree, not the patch's strings.

After `git apply --index` in the scoring worktree, git's own reading of what
changed (`worktree.staged_changes`) must name exactly the paths the patch reader
found: any disagreement means one of them misread a name, and the gate would be
told of another file than the one git edited (fail closed). Then, before Bazel
runs on the patched tree, two kinds of change go to review:

* a symlink the patch adds, changes, retargets or replaces (mode 120000 on either
  side): a symlink is configuration, and can make a guarded file reachable under
  an unguarded name (`tools -> dir/with/a/bazel`, `tools -> /usr/bin`);
* a touched path that is, or resolves through the tree's symlinks to, a file Bazel
  reads to configure itself (`bazel_config.is_bazel_config`), or resolves outside the
  workspace;
* a touched path that the workspace's `.bazelrc` imports, directly or through the
  files it imports, whatever its name (`import %workspace%/ci.rc`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from agent_gate.core import bazel_config
from agent_gate.core.locality import normalize_path
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.worktree import StagedChange

_SHOWN = 5
# How deep `import` lines are followed; Bazel itself refuses an import cycle.
_RC_DEPTH = 32


def _normal(path: str) -> str:
    try:
        return normalize_path(path)
    except ValueError:
        return path


def cross_check(touched: Sequence[str], changes: Sequence[StagedChange]) -> None:
    """CliError unless git changed exactly the paths the patch reader found."""
    read = {_normal(path) for path in touched}
    applied = {change.path for change in changes}
    if read == applied:
        return
    only_read = sorted(read - applied)[:_SHOWN]
    only_git = sorted(applied - read)[:_SHOWN]
    raise CliError(
        "the patch reader and git disagree about which files the patch touches "
        f"(only the reader: {only_read or 'none'}; only git: {only_git or 'none'}); the gate "
        "would be told of other files than those git changed, so nothing is scored (fail "
        "closed). Send a plain `git diff --binary` with `diff --git` headers"
    )


def symlink_changes(changes: Sequence[StagedChange]) -> list[str]:
    """Paths whose symlink the patch adds, changes, retargets or replaces."""
    return [change.path for change in changes if change.symlink]


def _import_target(line: str) -> str | None:
    """The file an rc line `import X` or `try-import X` names, as written, else None."""
    words = line.strip().split(None, 1)
    if len(words) != 2 or words[0] not in ("import", "try-import"):
        return None
    target = words[1].strip()
    if len(target) >= 2 and target[0] == target[-1] and target[0] in "'\"":
        target = target[1:-1]
    return target


def rc_imports(workspace: Path) -> set[str]:
    """Workspace-relative paths of every rc file the workspace's `.bazelrc` imports.

    Followed through the imported files, present or not (a `try-import` of a file
    the patch adds counts too). Paths outside the workspace are not the patch's.
    """
    root = Path(os.path.realpath(workspace))
    found: set[str] = set()
    pending = [(root / ".bazelrc", 0)]
    while pending:
        rc, depth = pending.pop()
        try:
            text = rc.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            target = _import_target(line)
            if target is None:
                continue
            if target.startswith("%workspace%/"):
                path = root / target.removeprefix("%workspace%/")
            elif target.startswith("/"):
                path = Path(target)
            else:
                continue  # Bazel reads it relative to its own working directory
            try:
                relative = _normal(Path(os.path.normpath(path)).relative_to(root).as_posix())
            except ValueError:
                continue
            if relative not in found:
                found.add(relative)
                if depth < _RC_DEPTH:
                    pending.append((root / relative, depth + 1))
    return found


def control_paths(workspace: Path, touched: Sequence[str]) -> list[str]:
    """Touched paths that configure Bazel: by name, by where they resolve, or imported.

    Resolution is the tree's own (os.path.realpath: symlink loops end it, they do
    not hang it); a path that resolves outside the workspace counts too.
    """
    root = Path(os.path.realpath(workspace))
    parents: dict[str, Path] = {}
    found: list[str] = []
    imported = rc_imports(workspace)
    for path in touched:
        normal = _normal(path)
        if bazel_config.is_bazel_config(normal) or normal in imported:
            found.append(path)
            continue
        folder, _, name = normal.rpartition("/")
        try:
            if folder not in parents:
                parents[folder] = Path(os.path.realpath(workspace / folder))
            resolved = parents[folder] / name
            if resolved.is_symlink():
                resolved = Path(os.path.realpath(resolved))
            relative = resolved.relative_to(root).as_posix()
        except (OSError, ValueError):
            found.append(path)  # it resolves outside the workspace, or cannot be resolved
            continue
        if relative != normal and bazel_config.is_bazel_config(relative):
            found.append(path)
    return found
