"""Guards that read the applied tree, not the patch's strings.

After `git apply --index` in the scoring worktree, git's own reading of what
changed (`worktree.staged_changes`) must name exactly the paths the patch reader
found: any disagreement means one of them misread a name, and the gate would be
told of another file than the one git edited (fail closed). Then, before Bazel
runs on the patched tree, two kinds of change go to review:

* a symlink the patch adds, changes, retargets or replaces (mode 120000 on either
  side): a symlink is configuration, and can make a guarded file reachable under
  an unguarded name (`tools -> dir/with/a/bazel`, `tools -> /usr/bin`);
* a gitlink (mode 160000) the patch adds, moves or replaces: the submodule's code
  is not in the scoring tree, so nothing the gate runs has seen it;
* a touched path that is, or resolves through the tree's symlinks to, a file Bazel
  reads to configure itself (`bazel_config.is_bazel_config`), or resolves outside the
  workspace;
* a touched path that a repository rule of the base reads (`repository_inputs`, from
  Bazel's marker files): it runs on the host, unsandboxed, when that input changes;
* a touched path that an rc file Bazel reads (the workspace's `.bazelrc`, the
  user's, the system's) imports, directly or through the files it imports,
  whatever its name, however Bazel's client spells it (`import %workspace%/ci.rc`,
  `try-import ci.rc` read from the workspace root, a trailing comment, a line
  continued with a backslash). An imported rc file can set `--strategy_regexp`,
  whose first matching filter outranks every strategy flag the CLI passes;
* a touched path that an option of those rc files names (`_option_path`): a
  `--workspace_status_command` script runs on the host at every build.
"""

from __future__ import annotations

import os
import re
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


def gitlink_changes(changes: Sequence[StagedChange]) -> list[str]:
    """Paths whose gitlink (a submodule's commit) the patch adds, moves or replaces.

    The scoring tree holds an empty directory there; the code a checkout with
    submodules fetches after the merge is code no property ran on.
    """
    return [change.path for change in changes if change.gitlink]


def _rc_words(line: str) -> list[str]:
    """The words of one rc line as the Bazel client's tokenizer reads them.

    A backslash keeps the next character literally, inside quotes too; single and
    double quotes group (and may join a word: `'%workspace%'/a.rc`); a `#` outside
    quotes ends the line.
    """
    words: list[str] = []
    word: list[str] = []
    in_word = escaped = False
    quote = ""
    for char in line:
        if escaped:
            word.append(char)
            escaped = False
        elif char == "\\":
            escaped = in_word = True
        elif quote:
            if char == quote:
                quote = ""
            else:
                word.append(char)
        elif char in "'\"":
            quote, in_word = char, True
        elif char == "#":
            break
        elif char.isspace():
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
        else:
            word.append(char)
            in_word = True
    if in_word:
        words.append("".join(word))
    return words


def _rc_lines(text: str) -> list[str]:
    """An rc file's lines after Bazel joins each line ending in a backslash with the next."""
    return text.replace("\\\r\n", "").replace("\\\n", "").split("\n")


def _with_environment(line: str) -> str:
    """`line` with each `${NAME}` the environment defines replaced, as Bazel >= 7 does."""
    return _ENV_REFERENCE.sub(lambda match: os.environ.get(match[1]) or match[0], line)


_ENV_REFERENCE = re.compile(r"\$\{(.*?)\}")


def _import_targets(line: str) -> set[str]:
    """The files an rc line `import X` or `try-import X` names, in every reading Bazel has.

    Literal, and with environment references substituted (Bazel 4.2.3 reads the
    first, Bazel >= 7 the second).
    """
    targets: set[str] = set()
    for reading in {line, _with_environment(line)}:
        words = _rc_words(reading.strip())
        if len(words) == 2 and words[0] in ("import", "try-import"):
            targets.add(words[1])
    return targets


def _resolve_import(target: str, root: Path) -> Path:
    """Where Bazel opens an imported rc file.

    `%workspace%` is the workspace root; any other relative name is read from the
    client's working directory, which for every Bazel the CLI runs is that root too.
    """
    if target.startswith(_WORKSPACE_PREFIX):
        return Path(str(root) + "/" + target[len(_WORKSPACE_PREFIX) :].lstrip("/"))
    return root / target  # an absolute target replaces root


_WORKSPACE_PREFIX = "%workspace%"


def default_rc_files() -> list[Path]:
    """The rc files outside the workspace Bazel reads too: the user's and the system's.

    Trusted themselves, but an import in them of `%workspace%/...` or a relative name
    reaches into the patched tree.
    """
    found = [Path("/etc/bazel.bazelrc"), Path("/etc/bazel/bazelrc")]  # upstream's, Debian's
    home = os.environ.get("HOME")
    if home:
        found.append(Path(home) / ".bazelrc")
    return found


def _rc_chain(workspace: Path, rc_files: Sequence[Path] | None) -> tuple[set[str], list[str]]:
    """(the workspace paths every rc file imports, the option words of every rc line).

    Starting from the workspace's `.bazelrc` and `rc_files` (default:
    `default_rc_files`), followed through the imported files, present or not (a
    `try-import` of a file the patch adds counts too), as Bazel's client reads them
    (`_rc_words`, `_rc_lines`, `_resolve_import`). A name is kept both as written
    and as the tree's symlinks resolve it. Paths outside the workspace are not the
    patch's, but are followed: they may import from it.
    """
    root = Path(os.path.realpath(workspace))
    found: set[str] = set()
    options: list[str] = []
    starts = [root / ".bazelrc", *(default_rc_files() if rc_files is None else rc_files)]
    pending = [(Path(os.path.normpath(path)), 0) for path in starts]
    seen = {path for path, _ in pending}
    while pending:
        rc, depth = pending.pop()
        try:
            text = rc.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in _rc_lines(text):
            targets = _import_targets(line)
            if not targets:
                for reading in {line, _with_environment(line)}:
                    options.extend(_rc_words(reading.strip())[1:])
            for target in targets:
                path = Path(os.path.normpath(_resolve_import(target, root)))
                for spelling in (path, Path(os.path.realpath(path))):
                    if spelling.is_relative_to(root):  # outside it: followed, not the patch's
                        found.add(_normal(spelling.relative_to(root).as_posix()))
                if path not in seen and depth < _RC_DEPTH:
                    seen.add(path)
                    pending.append((path, depth + 1))
    return found, options


def rc_imports(workspace: Path, rc_files: Sequence[Path] | None = None) -> set[str]:
    """Workspace-relative paths of every rc file Bazel's rc files import (`_rc_chain`)."""
    return _rc_chain(workspace, rc_files)[0]


def _option_path(candidate: str, root: Path) -> str | None:
    """The workspace path an option value names: `%workspace%/x`, `a/b`, a label's file
    or package (`//pkg:name`), an absolute path inside the workspace; else None.

    A bare word (`errors`, `ci`) is never a path: `--config=lib` must not guard `lib/`.
    """
    label = next((candidate[len(p) :] for p in _MAIN_REPOSITORY if candidate.startswith(p)), None)
    if label is not None:
        package, _, name = label.partition(":")
        named = f"{package}/{name}".strip("/") if name else ""
        if named and (root / named).exists():
            return _normal(named)
        return _normal(package) if package.strip("/") else None
    if candidate.startswith("@"):
        return None  # another repository's label
    if candidate.startswith(_WORKSPACE_PREFIX):
        path = Path(str(root) + "/" + candidate[len(_WORKSPACE_PREFIX) :].lstrip("/"))
    elif "/" in candidate:
        path = root / candidate
    else:
        return None
    path = Path(os.path.normpath(path))
    if path == root or not path.is_relative_to(root):
        return None
    return _normal(path.relative_to(root).as_posix())


def rc_named_paths(workspace: Path, rc_files: Sequence[Path] | None = None) -> set[str]:
    """Workspace paths that the values of options in Bazel's rc files name.

    `--workspace_status_command=tools/status.sh` and `--credential_helper=...` run
    on the host at every build, `--run_under=//pkg:wrapper` wraps the gate itself:
    what they name configures Bazel, like the rc file naming it.
    """
    root = Path(os.path.realpath(workspace))
    found: set[str] = set()
    for word in _rc_chain(workspace, rc_files)[1]:
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        for candidate in re.split("[=,]", value):
            path = _option_path(candidate, root)
            if path:
                found.add(path)
    return found


def _under_any(touched: Sequence[str], prefixes: set[str]) -> list[str]:
    """Touched paths that are, or lie under, one of `prefixes` (normalized paths)."""
    if not prefixes:
        return []
    found = []
    for path in touched:
        parts = _normal(path).split("/")
        if any("/".join(parts[:end]) in prefixes for end in range(1, len(parts) + 1)):
            found.append(path)
    return found


# Marker-file entries naming what a repository rule read or watched (Bazel 4.2.3:
# `FILE://pkg:name`; Bazel 7: `FILE:@@//pkg/name`, `DIRENTS:`, `STAT:`).
_MARKER_INPUTS = ("FILE:", "DIRENTS:", "DIRTREE:", "STAT:")
_MAIN_REPOSITORY = ("@@//", "@//", "//")


def _marker_path(key: str, root: Path) -> str | None:
    """The workspace-relative path a marker key names in the main repository, else None."""
    for prefix in _MAIN_REPOSITORY:
        if key.startswith(prefix):
            rest = key[len(prefix) :]
            package, colon, name = rest.partition(":")
            return _normal(f"{package}/{name}".strip("/") if colon else rest)
    if key.startswith("/"):
        path = Path(os.path.normpath(key))
        if path.is_relative_to(root):
            return _normal(path.relative_to(root).as_posix())
    return None


def repository_inputs(output_base: Path, workspace: Path) -> set[str]:
    """Workspace paths that repository rules read, as their marker files record them.

    A repository rule runs on the host, outside every sandbox, whenever one of its
    inputs changes; an input in a locality (a script it runs, requirements it
    installs) lets a patch run code there before any property does. So such a path
    configures Bazel like an rc file. Read from `output_base/external/*.marker`, which
    Bazel writes when it fetches a repository (the base's catalog build fetched them).
    """
    root = Path(os.path.realpath(workspace))
    found: set[str] = set()
    for marker in sorted((output_base / "external").glob("@*.marker")):
        try:
            text = marker.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            kind = next((k for k in _MARKER_INPUTS if line.startswith(k)), None)
            if kind is None:
                continue
            key = line[len(kind) :].rsplit(" ", 1)[0] if " " in line else line[len(kind) :]
            path = _marker_path(key, root)
            if path:
                found.add(path)
    return found


def read_by_repository_rules(touched: Sequence[str], inputs: set[str]) -> list[str]:
    """Touched paths that are, or lie under, a repository rule's input (`repository_inputs`)."""
    return _under_any(touched, inputs)


def beyond_symlinks(workspace: Path, touched: Sequence[str]) -> list[str]:
    """Touched paths below a symlink of the worktree as it is before the patch applies.

    Bazel's convenience symlinks (`bazel-out`, `bazel-<workspace>`) are untracked and
    point into the output base; git apply refuses to write beyond a symlink it
    tracks, not beyond an untracked one. A new file under them would be written into
    the output base a later score reuses, whatever the decision: never apply it.
    Nor a path at the workspace's top named as those links are (`bazel-*`): one that
    a fresh worktree does not have yet would keep Bazel from making its link, and
    the CLI reads reports and configs through them.
    """
    links: dict[str, bool] = {}
    found: list[str] = []
    for path in touched:
        if _normal(path).startswith("bazel-"):
            found.append(path)
            continue
        parts = _normal(path).split("/")[:-1]
        for end in range(1, len(parts) + 1):
            folder = "/".join(parts[:end])
            if folder not in links:
                links[folder] = (workspace / folder).is_symlink()
            if links[folder]:
                found.append(path)
                break
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
    named = set(_under_any(touched, rc_named_paths(workspace)))
    for path in touched:
        normal = _normal(path)
        if bazel_config.is_bazel_config(normal) or normal in imported or path in named:
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
