"""Which touched paths need a human whatever the votes: the evaluator's per-path guards.

A path is guarded when editing it can change the judge rather than what is judged:
a fixture tree or its seal, the ledger, the rule set, a predicate and what sits
beside it, a BUILD file declaring a property, its test or the gate, Bazel's own
configuration, Starlark, an import hook, a test runner's configuration, a module
that shadows one a test imports, or a file a test's closure may read that no
strong property observes.

Every touched path is checked, and most are product code far from every guard.
`PathGuards.clear` proves that of a path with a few lookups (its tripwires); only
a path that trips a wire gets every guard's full check (`PathGuards.whys`). A wire
may trip where no guard fires, never the reverse: a new guard needs a wire.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from agent_gate.core import bazel_config
from agent_gate.core.bazel_config import is_bazel_config, is_starlark
from agent_gate.core.locality import component_prefixes
from agent_gate.core.wording import names

BUILD_FILE_NAMES = ("BUILD", "BUILD.bazel")
# Files an interpreter or test runner executes before the predicate's first line
# (Python's site hooks, pytest's plugins, Java's service loader): product code placed
# there runs inside the judge, so adding or editing one anywhere is review.
IMPORT_HOOK_NAMES = ("sitecustomize.py", "usercustomize.py", "conftest.py", "pytest.ini")
IMPORT_HOOK_SUFFIXES = (".pth",)
IMPORT_HOOK_DIRECTORIES = ("META-INF/services",)
# Files a test runner reads for its options before it collects a test: pytest's
# `addopts = -k "not the_failing_test"` in one of them deselects what would fail.
TEST_RUNNER_CONFIG_NAMES = (".pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")
# Modules a predicate imports before its first check: the standard library and the
# test frameworks. One of these names as a top-level module on a test's import path
# (`unittest.py` beside `imports = ["."]`) replaces the real one inside the judge.
FRAMEWORK_MODULES = frozenset(
    (
        *("_pytest", "pytest", "absl", "hypothesis", "pluggy", "mock", "nose", "runfiles"),
        # `python` is rules_python's runfiles package; `google` holds protobuf.
        *("python", "google"),
    )
)
# Top-level packages installed as namespace packages (no `__init__.py`): a directory
# of that name at any depth below an import root joins them.
NAMESPACE_PACKAGES = frozenset(("google",))
SHADOWED_MODULES = frozenset(getattr(sys, "stdlib_module_names", ())) | FRAMEWORK_MODULES

# The tripwires of the guards that look at a path's name or directory names, built
# from the same constants the guards use: a path whose name or directory trips one
# gets the full check. `__init__.` stands for the package a module there defines.
_WIRED_NAMES = frozenset(
    (
        *BUILD_FILE_NAMES,
        *IMPORT_HOOK_NAMES,
        *TEST_RUNNER_CONFIG_NAMES,
        *bazel_config.NAMES,
        bazel_config.LAUNCHER_HOOK.rpartition("/")[2],
    )
)
_WIRED_NAME_PREFIXES = (*bazel_config.PREFIXES, "__init__.")
_WIRED_SUFFIXES = (
    *bazel_config.SUFFIXES,
    *bazel_config.STARLARK_SUFFIXES,
    *IMPORT_HOOK_SUFFIXES,
)
_WIRED_DIRECTORIES = NAMESPACE_PACKAGES | {hooks.split("/")[0] for hooks in IMPORT_HOOK_DIRECTORIES}


class PrefixGuards:
    """Guarded path prefixes, each with its reasons (or owners)."""

    def __init__(self) -> None:
        self._why: dict[str, list[str]] = {}
        # Every proper component prefix of a guarded prefix: a path's walk down its
        # own prefixes stops as soon as no guard lies below, so a diff of paths far
        # from every guard costs one or two lookups a path.
        self._above: set[str] = set()

    def add(self, prefix: str, why: str) -> None:
        reasons = self._why.setdefault(prefix, [])
        if why not in reasons:
            reasons.append(why)
        self._above.update(
            candidate for candidate in component_prefixes(prefix) if candidate != prefix
        )

    def prefixes(self) -> Iterable[str]:
        return self._why.keys()

    def hits(self, path: str) -> list[tuple[str, str]]:
        """(prefix, why) for every guarded prefix covering the path.

        The walk of `component_prefixes`, inlined: it runs for every touched path
        (the tripwires' and the voters' walks), and most stop at the first component.
        """
        found: list[tuple[str, str]] = []
        if not self._why:
            return found
        cut = path.find("/")
        while True:
            candidate = path if cut < 0 else path[:cut]
            reasons = self._why.get(candidate)
            if reasons:
                found.extend((candidate, why) for why in reasons)
            if cut < 0 or candidate not in self._above:
                return found
            cut = path.find("/", cut + 1)


@dataclass
class PathGuards:
    """Every per-path guard of one evaluation. Paths are normalized and repo-relative."""

    guards: PrefixGuards  # fixture trees, seals, the ledger, the rule set, predicate sources
    beside: PrefixGuards  # directory of a predicate source -> its owners
    observed: set[str]  # every locality prefix, strong or weak
    strong: set[str]  # every strong locality prefix
    excused: set[str]  # the valid `unobserved_ok` prefixes
    gate_package: str
    packages: Mapping[str, list[str]]  # package of a property's BUILD file -> its ids
    test_packages: Mapping[str, list[str]]  # package declaring a property's test -> ids
    closure: Mapping[str, list[str]]  # package of a test's closure -> property ids
    import_roots: Mapping[str, list[str]]  # directory on a test's import path -> ids
    _at_or_above_roots: dict[str, list[str]] = field(init=False)
    _wired: PrefixGuards = field(init=False)

    def __post_init__(self) -> None:
        self._at_or_above_roots = _import_roots_at_or_below(self.import_roots)
        # Prefix wires: what the prefix guards below a path look up (`guards` and
        # `closure` over the path's prefixes, `beside` over its directory's).
        self._wired = PrefixGuards()
        for prefix in (*self.guards.prefixes(), *self.beside.prefixes(), *self.closure):
            self._wired.add(prefix, "wired")

    def clear(self, path: str) -> bool:
        """True only when no guard of `whys` can fire for the path (its tripwires).

        False for a path with a wired name or directory name, at or above an import
        root, named like a shadowed module in an import root, or at or below a wired
        prefix ("" among them, a predicate or closure package at the root: every path).
        """
        directory, _, name = path.rpartition("/")
        if (
            "" in self._wired.prefixes()
            or name in _WIRED_NAMES
            or name.startswith(_WIRED_NAME_PREFIXES)
            or name.endswith(_WIRED_SUFFIXES)
            or path in self._at_or_above_roots
            or (name.partition(".")[0] in SHADOWED_MODULES and directory in self.import_roots)
        ):
            return False
        for wired in _WIRED_DIRECTORIES:  # a substring test first: splitting costs more
            if wired in directory and wired in directory.split("/"):
                return False
        return not self._wired.hits(path)

    def whys(self, path: str) -> tuple[list[tuple[str, str]], list[str]]:
        """(the prefix guards' hits, every reason the path is guarded): every guard in full."""
        hits = self.guards.hits(path)
        whys = [why for _, why in hits]
        directory, _, name = path.rpartition("/")  # normalized: no trailing '/'
        if name in BUILD_FILE_NAMES:
            if directory == self.gate_package:
                whys.append("BUILD file declaring the agent_gate target")
            if directory in self.packages:
                whys.append(f"BUILD file defining property {names(self.packages[directory])}")
            if directory in self.test_packages:
                whys.append(
                    f"BUILD file declaring the test of {names(self.test_packages[directory])}"
                )
        if is_starlark(name):
            whys.append("Starlark: it can redefine properties, their predicates or the gate")
        if is_bazel_config(path):
            whys.append("Bazel configuration: it can replace the gate or rewrite its verdict")
        if _is_import_hook(path, name):
            whys.append("an import hook: it runs inside the judge before the predicate does")
        if name in TEST_RUNNER_CONFIG_NAMES:
            whys.append("test-runner configuration: it can change which checks the predicate runs")
        owners = _beside_predicate(path, directory, self.beside, self.observed)
        if owners:
            whys.append(
                f"beside the predicate of {names(owners)} (its helpers, data or "
                "BUILD file), observed by no property"
            )
        archive_of = self._at_or_above_roots.get(path, [])
        if archive_of:
            whys.append(
                f"an archive or directory on the import path of the test of {names(archive_of)}"
                " (Python imports from it): a module in it can shadow any the test imports"
            )
        shadowed = _shadowed_module(path, self.import_roots)
        if shadowed:
            whys.append(
                f"module {shadowed[0]!r} on the import path of the test of "
                f"{names(shadowed[1])}: it shadows the module of that name the test imports"
            )
        if name in BUILD_FILE_NAMES and _excused_build_file(path, self.excused, self.strong):
            whys.append(
                "BUILD file under unobserved_ok: an alias or config_setting in it can "
                "redirect what a test reads, and no closure records its package"
            )
        read_by = _read_by_test(path, directory, self.closure, self.strong)
        if read_by:
            whys.append(
                f"in package {read_by[0]!r} of the closure of the test of "
                f"{names(read_by[1])}, observed by no strong property"
            )
        return hits, whys


def by_key(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Group values by key, first-seen order, each value once (dicts keep it linear)."""
    grouped: dict[str, dict[str, None]] = {}
    for key, value in pairs:
        grouped.setdefault(key, {})[value] = None
    return {key: list(values) for key, values in grouped.items()}


def module_at(path: str) -> tuple[str, str]:
    """The import root a path would be a top-level module of, and that module.

    `R/x.py` is module `x` of root `R`, and so is `R/x/__init__.py` (package `x`);
    a name ends at its first dot. `module_at` in rules/private/paths.bzl is the
    same rule (tests/unit/boundary/module_cases.bzl runs both).
    """
    directory, _, name = path.rpartition("/")
    if name.startswith("__init__.") and directory:
        parent, _, package = directory.rpartition("/")
        return parent, package
    return directory, name.split(".", 1)[0]


def _is_import_hook(path: str, name: str) -> bool:
    if name in IMPORT_HOOK_NAMES or name.endswith(IMPORT_HOOK_SUFFIXES):
        return True
    return any(
        path.startswith(hooks + "/") or f"/{hooks}/" in path for hooks in IMPORT_HOOK_DIRECTORIES
    )


def _beside_predicate(
    path: str, directory: str, beside: PrefixGuards, observed: set[str]
) -> list[str]:
    """Owners of predicates the path sits beside, unless a locality observes it.

    A predicate is more than its `srcs`: helpers, golden data and the BUILD file
    declaring the test usually sit in the same directory tree. That tree is
    guarded, except for what a property's locality covers (product code, which
    patches may change). A predicate at the repository root guards only its
    own directory's files, not the whole repository: the walk of a directory's
    prefixes never reaches "", only the root directory itself is "".
    """
    found = [owner for _, owner in beside.hits(directory)]
    if not found or any(candidate in observed for candidate in component_prefixes(path)):
        return []
    return list(dict.fromkeys(found))


def _import_roots_at_or_below(import_roots: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """For each directory or file at or above an import root, the owners of the roots
    there: what a touched path that is an archive on the import path is a part of.

    `imports = ["vendor.zip"]` puts an archive on the import path: Python reads
    every module in it as top-level, whatever the touched path is named. Built once
    per evaluation, so each touched path is one lookup, not a scan of every root.
    """
    return by_key(
        (prefix, owner)
        for root, owners in import_roots.items()
        if root
        for prefix in component_prefixes(root)
        for owner in owners
    )


def _shadowed_module(
    path: str, import_roots: Mapping[str, list[str]]
) -> tuple[str, list[str]] | None:
    """The standard or framework module a path would replace on a test's import path.

    `R/x.py` is top-level module `x` of import root `R`, and so is `R/x/__init__.py`;
    when `x` is a module the predicate imports, product code runs in its place. A
    namespace package needs no `__init__.py` at all: `R/google/protobuf/x.py` is
    merged into `google`, ahead of the installed protobuf.
    """
    candidates = [module_at(path)]
    parts = path.split("/")
    candidates.extend(
        ("/".join(parts[:end]), parts[end])
        for end in range(len(parts) - 1)
        if parts[end] in NAMESPACE_PACKAGES
    )
    for root, module in candidates:
        if module in SHADOWED_MODULES and root in import_roots:
            return module, import_roots[root]
    return None


def _excused_build_file(path: str, excused: set[str], strong: set[str]) -> bool:
    """Whether a BUILD file would be excused by `unobserved_ok` alone.

    A test's closure walk (an aspect) passes through an alias to its target and
    never sees a `select()`'s config_setting, so their packages are in no
    closure: retargeting an alias there empties a test's data unseen. A BUILD
    file is build configuration, never prose: it needs a strong voter.
    """
    holders = list(component_prefixes(path))
    if any(candidate in strong for candidate in holders):
        return False
    return any(candidate in excused for candidate in holders)


def _read_by_test(
    path: str, directory: str, closure: Mapping[str, list[str]], strong: set[str]
) -> tuple[str, list[str]] | None:
    """The innermost package of a test's closure holding the path, and its owners.

    A test may read any file at or below a package of its closure: a source file,
    a glob's new match, a BUILD file that splits the package. Unless a strong
    locality covers the path, `unobserved_ok` must not excuse it.
    """
    if not closure or any(candidate in strong for candidate in component_prefixes(path)):
        return None
    holders = [""] + (list(component_prefixes(directory)) if directory else [])
    for package in reversed(holders):
        if package in closure:
            return package, closure[package]
    return None
