"""Files that configure Bazel itself, by name: one rule for the evaluator and the CLI.

By name wherever they are (a nested workspace, a directory a symlink points into):
the `tools/bazel` hook of the `bazel` launcher and of bazelisk, the Bazel version,
the ignore list, the repository definitions (which can point @agent_gate
elsewhere; with Bazel >= 7.2 that includes every `*.MODULE.bazel` a MODULE.bazel
`include()`s) and every rc file (`.bazelrc`, an imported `user.bazelrc`, ...). A
patch touching one could replace the gate or rewrite its verdict from outside it:
the evaluator sends it to review, and the CLI never runs Bazel on it
(docs/threat-model.md).
"""

from __future__ import annotations

from collections.abc import Sequence

NAMES = (".bazelignore", ".bazelversion", ".bazeliskrc", "REPO.bazel")
PREFIXES = ("WORKSPACE", "MODULE.bazel")
SUFFIXES = ("bazelrc", ".MODULE.bazel")
LAUNCHER_HOOK = "tools/bazel"
# Starlark that BUILD files, MODULE.bazel and WORKSPACE load: `.bzl`, and `.scl`
# (Bazel >= 7 with --experimental_enable_scl_dialect, on by default from Bazel 8).
STARLARK_SUFFIXES = (".bzl", ".scl")


def is_bazel_config(path: str) -> bool:
    """Whether `path` (workspace-relative) names a file Bazel reads to configure itself.

    By name only: the evaluator's tripwires (core/path_guards.py) are built from
    these constants, so a rule of another kind needs a wire there too.
    """
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts:
        return False
    name = parts[-1]
    return (
        name in NAMES
        or name.startswith(PREFIXES)
        or name.endswith(SUFFIXES)
        or parts[-2:] == LAUNCHER_HOOK.split("/")
    )


def bazel_config_paths(paths: Sequence[str]) -> list[str]:
    """The paths that configure Bazel itself (`is_bazel_config`)."""
    return [path for path in paths if is_bazel_config(path)]


def is_starlark(path: str) -> bool:
    """Whether `path` names a Starlark file that `load()` reads (`STARLARK_SUFFIXES`)."""
    return path.endswith(STARLARK_SUFFIXES)
