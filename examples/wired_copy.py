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
    text = workspace_file.read_text(encoding="utf-8")
    wired, count = LOCAL_REPOSITORY.subn(
        lambda match: f'{match.group(1)}"{checkout.as_posix()}"', text
    )
    if count != 1:
        raise CopyError(
            f'{workspace_file} has no local_repository(name = "agent_gate", path = ...) '
            "to point at this checkout"
        )
    workspace_file.write_text(wired, encoding="utf-8")


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


def _make_writable_and_retry(function: Callable[..., Any], path: str, _: Any) -> None:
    """rmtree error hook: Bazel leaves read-only directories in its output base."""
    parent = os.path.dirname(path)
    os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, os.stat(path).st_mode | stat.S_IRWXU)
    function(path)


def remove_tree(path: Path) -> None:
    """Delete a directory Bazel wrote into, read-only parts included."""
    if path.exists():
        shutil.rmtree(path, onerror=_make_writable_and_retry)
