"""Git copies of an example monorepo, wired to the agent_gate checkout under test.

The demo (examples/cases.py), the end-to-end tests and the score benchmark score
patches in such a copy, never in examples/ itself. A copy's
`local_repository(name = "agent_gate")` is pointed at the checkout, and git runs
with a fixed identity, no hooks and no system configuration, so that a developer's
git setup cannot change what the copy's commits are.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

LOCAL_REPOSITORY = re.compile(
    r'(local_repository\(\s*name\s*=\s*"agent_gate"\s*,\s*path\s*=\s*)"[^"]*"'
)
# The bzlmod entry (Bazel >= 7) names the checkout the same way.
LOCAL_PATH_OVERRIDE = re.compile(
    r'(local_path_override\(\s*module_name\s*=\s*"agent_gate"\s*,\s*path\s*=\s*)"[^"]*"'
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "agent_gate example",
    "GIT_AUTHOR_EMAIL": "agent-gate@example.invalid",
    "GIT_COMMITTER_NAME": "agent_gate example",
    "GIT_COMMITTER_EMAIL": "agent-gate@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class CopyError(Exception):
    """The copy cannot be made or driven: no local_repository to wire, git failing."""


def wire_to_checkout(workspace_file: Path, checkout: Path) -> None:
    """Point the file's one `local_repository(name = "agent_gate")` at `checkout`."""
    _wire(workspace_file, checkout, LOCAL_REPOSITORY, 'local_repository(name = "agent_gate"')


def wire_copy(root: Path, checkout: Path) -> None:
    """Point a copied workspace's WORKSPACE, and its MODULE.bazel if it has one, at `checkout`.

    Both entries are wired, so the one copy runs on either Bazel lane (WORKSPACE
    on 4.2.3, bzlmod on 7.7.1).
    """
    wire_to_checkout(root / "WORKSPACE", checkout)
    module = root / "MODULE.bazel"
    if module.is_file():
        what = 'local_path_override(module_name = "agent_gate"'
        _wire(module, checkout, LOCAL_PATH_OVERRIDE, what)


def _wire(path: Path, checkout: Path, pattern: re.Pattern[str], what: str) -> None:
    text = path.read_text(encoding="utf-8")
    wired, count = pattern.subn(lambda match: f'{match.group(1)}"{checkout.as_posix()}"', text)
    if count != 1:
        raise CopyError(f"{path} has no {what}, path = ...) to point at this checkout")
    path.write_text(wired, encoding="utf-8")


def git(
    cwd: Path, *arguments: str, stdin: bytes | None = None, env: Mapping[str, str] = GIT_ENV
) -> bytes:
    """`git ARGUMENTS` in `cwd` with `env` on top of this process's; its stdout."""
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", *arguments],
        cwd=cwd,
        env={**os.environ, **env},
        input=stdin,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise CopyError(
            f"git {' '.join(arguments)} failed in {cwd} (exit {done.returncode}): "
            f"{done.stderr.decode('utf-8', 'replace').strip()}"
        )
    return done.stdout


def _make_writable_and_retry(function: Callable[..., Any], path: str, error: Any) -> None:
    """rmtree error hook: Bazel leaves read-only directories in its output base.

    An entry that vanished while the tree was read (a Bazel server deletes its
    temporary trees in the background as it exits) needs no removal.
    """
    if isinstance(error[1], FileNotFoundError):
        return
    parent = os.path.dirname(path)
    os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, os.stat(path).st_mode | stat.S_IRWXU)
    function(path)


def remove_tree(path: Path) -> None:
    """Delete a directory Bazel wrote into, read-only parts included."""
    if path.exists():
        shutil.rmtree(path, onerror=_make_writable_and_retry)
