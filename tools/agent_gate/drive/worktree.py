"""The git side of the CLI: the user's repository and the isolated scoring worktree.

A patch is never applied to the user's checkout. Every command that builds or
applies anything works in one detached git worktree of the same repository, at
`${XDG_CACHE_HOME:-~/.cache}/agent_gate/<name>-<hash of the git common dir>/scoring`:
outside the user's checkout and its `.git`, so nothing reaches them through `..`
from the worktree. It is reset to a base revision, cleaned, then patched with
`git apply` (after `git apply --check`). Its path never changes, so its Bazel
server and output base stay warm from one score to the next. A lock file beside
it serializes agent-gate runs on one repository; `runs/` and `reports/` hold logs
and reports.

The Bazel workspace may be the repository's top or a directory inside it; patch
paths are relative to the workspace root (what `changed_paths` means).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.progress import Progress

WORKSPACE_FILES = ("WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel")
STATE_DIR = "agent_gate"
_HEX_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")
# Hooks and pagers of the user's configuration have no business in the scoring worktree.
_GIT_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "advice.detachedHead=false",
    "-c",
    "core.pager=cat",
)


@dataclass(frozen=True)
class Repo:
    """The user's checkout, its git directory and the Bazel workspace inside it."""

    toplevel: Path
    common_dir: Path
    workspace: Path  # absolute root of the user's Bazel workspace
    workspace_rel: str  # the workspace relative to toplevel; "" at the top

    @property
    def state_dir(self) -> Path:
        return state_dir_of(self.common_dir)

    @property
    def scoring_root(self) -> Path:
        return self.state_dir / "scoring"

    @property
    def scoring_workspace(self) -> Path:
        return self.scoring_root / self.workspace_rel if self.workspace_rel else self.scoring_root


def cache_home() -> Path:
    """`$XDG_CACHE_HOME`, else `~/.cache` (the XDG base directory rule: absolute or unset)."""
    value = os.environ.get("XDG_CACHE_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / ".cache"


def state_dir_of(common_dir: Path) -> Path:
    """The repository's agent_gate directory: readable name, keyed by its git common dir."""
    key = hashlib.sha256(os.fsencode(str(common_dir))).hexdigest()[:16]
    top = common_dir.parent if common_dir.name == ".git" else common_dir
    name = re.sub(r"[^A-Za-z0-9._-]", "_", top.name)[:40].lstrip(".") or "repo"
    return cache_home() / STATE_DIR / f"{name}-{key}"


def git(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    """Run git; its stdout, or CliError quoting git's own message."""
    done = _git(cwd, *args, stdin=stdin)
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or "no message"
        raise CliError(
            f"`git {' '.join(args)}` failed in {cwd} (exit {done.returncode}): {message}"
        )
    return done.stdout.decode("utf-8", "surrogateescape")


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("git") is None:
        raise CliError("git is not on PATH: install git (Debian package git) and retry")
    return subprocess.run(
        ["git", *_GIT_CONFIG, *args],
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )


def find_workspace(start: Path) -> Path:
    """The Bazel workspace root holding `start`: the nearest directory with a WORKSPACE file."""
    start = start.absolute()
    if not start.is_dir():
        raise CliError(f"workspace {start} is not a directory; pass --workspace <your checkout>")
    for candidate in (start, *start.parents):
        if any((candidate / name).is_file() for name in WORKSPACE_FILES):
            return candidate
    raise CliError(
        f"{start} is not inside a Bazel workspace (no {', '.join(WORKSPACE_FILES)} in it or "
        "above it): run agent-gate from your monorepo or pass --workspace <its root>"
    )


def open_repo(workspace: Path | None) -> Repo:
    """The workspace (default: the one holding the current directory) and its git repository."""
    root = find_workspace(workspace if workspace is not None else Path.cwd())
    done = _git(root, "rev-parse", "--show-toplevel", "--git-common-dir")
    lines = done.stdout.decode("utf-8", "surrogateescape").splitlines()
    if done.returncode != 0 or len(lines) != 2:
        raise CliError(
            f"{root} is not inside a git repository: agent-gate scores patches in a git "
            "worktree of the workspace's repository, at a commit. Run it in a git checkout "
            "(or `git init && git add -A && git commit` there first)"
        )
    toplevel = Path(lines[0]).resolve()
    common = Path(lines[1])
    common = (common if common.is_absolute() else root / common).resolve()
    resolved = root.resolve()
    try:
        rel = resolved.relative_to(toplevel).as_posix()
    except ValueError:
        raise CliError(f"workspace {root} is outside its git work tree {toplevel}") from None
    if resolved == common or common in resolved.parents:
        raise CliError(f"workspace {root} is inside the git directory {common}; use your checkout")
    state = state_dir_of(common).resolve()
    for inside in (toplevel, common):
        if state == inside or inside in state.parents:
            raise CliError(
                f"the agent_gate cache {state} is inside {inside}: a scored patch could reach "
                "the repository from there; set XDG_CACHE_HOME to a directory outside it"
            )
    return Repo(
        toplevel=toplevel,
        common_dir=common,
        workspace=resolved,
        workspace_rel="" if rel == "." else rel,
    )


def resolve_rev(repo: Repo, rev: str) -> str:
    """The full commit id of `rev` in the user's repository."""
    if not rev or rev.startswith("-"):
        raise CliError(f"base revision {rev!r} is not a revision; pass e.g. --base origin/main")
    done = _git(repo.toplevel, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    sha = done.stdout.decode().strip()
    if done.returncode != 0 or not sha:
        raise CliError(
            f"base revision {rev!r} is not a commit of {repo.toplevel}: fetch it, or pass "
            "--base with a branch, tag or commit id that exists there"
        )
    return sha


def commits_since(repo: Repo, commit: str, rev: str) -> int | None:
    """Commits in `rev` since `commit` (`git rev-list --count commit..rev`); None if unknown."""
    if not _HEX_COMMIT.match(commit):
        return None
    done = _git(repo.toplevel, "rev-list", "--count", f"{commit}..{rev}", "--")
    text = done.stdout.decode().strip()
    return int(text) if done.returncode == 0 and text.isdigit() else None


@contextmanager
def locked(repo: Repo, progress: Progress) -> Iterator[None]:
    """Hold the repository's agent-gate lock: one scoring worktree, one user at a time."""
    repo.state_dir.mkdir(parents=True, exist_ok=True)
    path = repo.state_dir / "lock"
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress.step(f"waiting for another agent-gate run in this repository ({path})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _registered(repo: Repo) -> bool:
    listed = git(repo.toplevel, "worktree", "list", "--porcelain")
    target = repo.scoring_root.resolve()
    for line in listed.splitlines():
        if line.startswith("worktree ") and Path(line[len("worktree ") :]).resolve() == target:
            return True
    return False


def _writable_and_retry(function: Callable[[str], object], path: str, _: object) -> None:
    """rmtree hook: Bazel leaves read-only directories behind."""
    parent = os.path.dirname(path)
    os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, os.stat(path).st_mode | stat.S_IRWXU)
    function(path)


def remove_tree(path: Path) -> None:
    """Delete a file, a symlink or a directory tree Bazel wrote into (read-only parts too)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, onerror=_writable_and_retry)


# How many run directories (`<state dir>/runs/<run id>`: Bazel's logs of one command)
# a score leaves, its own included, unless --keep-runs says otherwise.
DEFAULT_KEPT_RUNS = 20


def prune_runs(runs: Path, keep: int, progress: Progress) -> list[str]:
    """Delete all but the `keep` newest entries of `runs` (by modification time); their names.

    A symlink there is removed as a link, never followed.
    """
    try:
        entries = list(runs.iterdir())
    except FileNotFoundError:
        return []
    dated = []
    for entry in entries:
        try:
            dated.append((entry.lstat().st_mtime_ns, entry.name, entry))
        except FileNotFoundError:
            continue  # removed meanwhile
    dated.sort(reverse=True)
    removed = [entry for _, _, entry in dated[max(keep, 0) :]]
    for entry in removed:
        remove_tree(entry)
    if removed:
        progress.step(f"removed {len(removed)} old run log folder(s) from {runs} (keeping {keep})")
    return sorted(entry.name for entry in removed)


def _bazel_symlinks(repo: Repo) -> list[str]:
    """Bazel's convenience symlinks (`/bazel-bin`, ...), kept across resets.

    Those of the scoring workspace and of the worktree's top (a workspace may sit in
    a subdirectory, and the top may be scored too), as `git clean -e` patterns. Only
    symlinks: a file or directory a patch named `bazel-x` is cleaned like any other.
    """
    kept: list[str] = []
    prefix = f"/{repo.workspace_rel}" if repo.workspace_rel else ""
    for folder, anchor in ((repo.scoring_workspace, prefix), (repo.scoring_root, "")):
        if folder.is_dir():
            kept += [f"{anchor}/{p.name}" for p in folder.glob("bazel-*") if p.is_symlink()]
    return sorted(set(kept))


def prepare(repo: Repo, rev: str, progress: Progress) -> Path:
    """The scoring worktree, created or reused, reset and cleaned at commit `rev`.

    Returns the scoring workspace (the worktree, or the workspace directory in it).
    """
    root = repo.scoring_root
    git(repo.toplevel, "worktree", "prune")
    if _registered(repo) and (root / ".git").exists():
        progress.step(f"reusing the scoring worktree {root} at {rev[:12]}")
        git(root, "reset", "--quiet", "--hard", rev)
        keep = [arg for pattern in _bazel_symlinks(repo) for arg in ("-e", pattern)]
        git(root, "clean", "-ffdxq", *keep)
    else:
        if root.exists() or root.is_symlink():
            progress.step(f"removing a stale scoring worktree at {root}")
            remove_tree(root)
            git(repo.toplevel, "worktree", "prune")
        progress.step(f"creating the scoring worktree {root} at {rev[:12]}")
        root.parent.mkdir(parents=True, exist_ok=True)
        git(repo.toplevel, "worktree", "add", "--quiet", "--detach", "--force", str(root), rev)
    head = git(root, "rev-parse", "HEAD").strip()
    if head != rev:
        raise CliError(f"the scoring worktree {root} is at {head}, not {rev}; remove it and retry")
    workspace = repo.scoring_workspace
    if not any((workspace / name).is_file() for name in WORKSPACE_FILES):
        raise CliError(
            f"at {rev[:12]} the repository has no Bazel workspace at "
            f"{repo.workspace_rel or 'its top'} (no {', '.join(WORKSPACE_FILES)}); pass a --base "
            "that has one"
        )
    return workspace


def apply_patch(repo: Repo, patch: bytes, shown: str, base: str) -> None:
    """`git apply --check`, then `git apply --index`, of a patch in the scoring worktree."""
    args = ["apply", "--index", "--whitespace=nowarn"]
    if repo.workspace_rel:
        args.append(f"--directory={repo.workspace_rel}")
    check = _git(repo.scoring_root, *args, "--check", "-", stdin=patch)
    if check.returncode != 0:
        why = check.stderr.decode("utf-8", "replace").strip() or "git gave no reason"
        raise CliError(
            f"{shown} does not apply to base {base[:12]}: {why}\n"
            f"The patch was made against another tree: rebase it onto {base[:12]} (or pass "
            "--base <the commit it was made against>); paths in it are relative to the "
            "workspace root, as `git diff` writes them there"
        )
    git(repo.scoring_root, *args, "-", stdin=patch)


def describe(repo: Repo, rev: str) -> str:
    """How people know the scoring workspace: their checkout, at a commit."""
    return f"{repo.workspace} (at {rev[:12]})"


@dataclass(frozen=True)
class StagedChange:
    """One path of `git diff --cached --raw`: its modes on both sides (0: absent)."""

    path: str  # relative to the workspace root
    old_mode: int
    new_mode: int
    status: str

    @property
    def symlink(self) -> bool:
        """A symlink on either side: added, changed, retargeted or replaced."""
        return SYMLINK_MODE in (self.old_mode, self.new_mode)

    @property
    def gitlink(self) -> bool:
        """A submodule commit (gitlink) on either side: added, moved to another commit, replaced."""
        return GITLINK_MODE in (self.old_mode, self.new_mode)


SYMLINK_MODE = 0o120000
GITLINK_MODE = 0o160000


def staged_changes(repo: Repo) -> list[StagedChange]:
    """What the applied patch changed, read by git itself (the index against HEAD).

    `--no-renames` lists a rename as its two sides, as the patch reader does. Paths
    outside the workspace directory (impossible through `git apply --directory`)
    are kept with their repository path, so that a cross-check flags them.
    """
    done = _git(
        repo.scoring_root,
        "-c",
        "core.quotePath=false",
        "diff",
        "--cached",
        "--raw",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        # A patch's `.gitmodules` (`ignore = all`) must not hide a gitlink from git's list.
        "--ignore-submodules=none",
        "HEAD",
        "--",
    )
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip() or "no message"
        raise CliError(f"git cannot list what the patch changed in {repo.scoring_root}: {why}")
    return parse_raw(done.stdout, repo.workspace_rel)


def parse_raw(data: bytes, workspace_rel: str = "") -> list[StagedChange]:
    """`git diff --raw -z` records (`:old new sha sha status NUL path NUL`)."""
    fields = data.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    prefix = f"{workspace_rel}/" if workspace_rel else ""
    changes: list[StagedChange] = []
    index = 0
    while index < len(fields):
        header = fields[index].decode("ascii", "replace").split()
        if len(header) != 5 or not header[0].startswith(":") or index + 1 >= len(fields):
            raise CliError(f"git printed a --raw record the gate cannot read: {fields[index]!r}")
        status = header[4]
        paths = 2 if status[:1] in ("R", "C") else 1
        path = fields[index + paths].decode("utf-8", "surrogateescape")
        if prefix and path.startswith(prefix):
            path = path[len(prefix) :]
        try:
            old_mode, new_mode = int(header[0][1:], 8), int(header[1], 8)
        except ValueError:
            raise CliError(f"git printed modes the gate cannot read: {header!r}") from None
        changes.append(StagedChange(path, old_mode, new_mode, status))
        index += 1 + paths
    return changes
