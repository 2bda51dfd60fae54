"""The per-path guards' tripwires never clear a path a guard would catch.

`PathGuards.clear` skips every guard's full check for a path it proves safe. A
wrong wire is a silent hole in every guard at once, so this checks the wires
against the full check itself: over random guards and random paths drawn from
every name and directory a guard looks for (taken from the guards' own
constants), a cleared path has no reason at all. Then one case per guard: its
path is not cleared, so a wire removed is a failing test here too.
"""

import collections

from absl.testing import absltest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_gate.core import bazel_config, path_guards
from agent_gate.core.path_guards import PathGuards, PrefixGuards

# Directory names: plain ones, and every one a guard treats apart. Plain names are
# listed more than once, so that random paths are cleared often enough to check.
DIRECTORIES = (
    *("a", "b", "src", "lib.zip") * 3,
    *path_guards.NAMESPACE_PACKAGES,
    *(part for hooks in path_guards.IMPORT_HOOK_DIRECTORIES for part in hooks.split("/")),
    *bazel_config.LAUNCHER_HOOK.split("/"),
)
# File names: plain ones, and every name, prefix and suffix a guard looks for.
NAMES = (
    *("x.py", "data.json", "lib.zip") * 10,
    "__init__.py",
    "unittest.py",
    "os",
    "pytest.py",
    *path_guards.BUILD_FILE_NAMES,
    *path_guards.IMPORT_HOOK_NAMES,
    *(f"x{suffix}" for suffix in path_guards.IMPORT_HOOK_SUFFIXES),
    *path_guards.TEST_RUNNER_CONFIG_NAMES,
    *bazel_config.NAMES,
    *(f"{prefix}.old" for prefix in bazel_config.PREFIXES),
    *(f"x{suffix}" for suffix in (*bazel_config.SUFFIXES, *bazel_config.STARLARK_SUFFIXES)),
    bazel_config.LAUNCHER_HOOK.rpartition("/")[2],
)

_dirs = st.lists(st.sampled_from(DIRECTORIES), max_size=3).map("/".join)
_paths = st.tuples(_dirs, st.sampled_from(NAMES)).map(lambda p: f"{p[0]}/{p[1]}".lstrip("/"))
_prefixes = st.one_of(_dirs, _paths)
_owned = st.dictionaries(_prefixes, st.just(["p"]), max_size=3)


def _prefix_guards(prefixes: list[str]) -> PrefixGuards:
    guards = PrefixGuards()
    for prefix in prefixes:
        guards.add(prefix, f"guarded {prefix}")
    return guards


@st.composite
def _path_guards(draw: st.DrawFn) -> PathGuards:
    return PathGuards(
        guards=_prefix_guards(draw(st.lists(_prefixes, max_size=3))),
        beside=_prefix_guards(draw(st.lists(_dirs, max_size=2))),
        observed=set(draw(st.lists(_dirs, max_size=2))),
        strong=set(draw(st.lists(_dirs, max_size=2))),
        excused=set(draw(st.lists(_dirs.filter(bool), max_size=2))),
        gate_package=draw(_dirs),
        packages=draw(_owned),
        test_packages=draw(_owned),
        closure=draw(st.dictionaries(_dirs, st.just(["p"]), max_size=2)),
        import_roots=draw(_owned),
    )


def _guards(**fields) -> PathGuards:
    """Guards with nothing guarded but what `fields` name."""
    defaults = dict(
        guards=PrefixGuards(),
        beside=PrefixGuards(),
        observed=set(),
        strong=set(),
        excused=set(),
        gate_package="gate",
        packages={},
        test_packages={},
        closure={},
        import_roots={},
    )
    return PathGuards(**{**defaults, **fields})


class TripwireTest(absltest.TestCase):
    def test_a_cleared_path_has_no_reason(self):
        cleared: collections.Counter[bool] = collections.Counter()

        @settings(
            max_examples=2_000,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(_path_guards(), st.lists(_paths, min_size=1, max_size=12))
        def check(guards: PathGuards, paths: list[str]) -> None:
            for path in paths:
                if guards.clear(path):
                    cleared[True] += 1
                    self.assertEqual(guards.whys(path), ([], []), path)
                else:
                    cleared[False] += 1

        check()
        # Both sides are exercised: a wire that never clears would pass vacuously.
        self.assertGreater(cleared[True], 1_000, cleared)
        self.assertGreater(cleared[False], 1_000, cleared)

    def test_product_code_far_from_every_guard_is_cleared(self):
        guards = _guards(guards=_prefix_guards(["svc/tests/t.py", "fixtures/f"]))
        self.assertTrue(guards.clear("svc/src/deep/er/m.py"))
        self.assertTrue(guards.clear("other/x/data.json"))

    def test_each_guard_has_a_wire(self):
        beside = PrefixGuards()
        beside.add("svc/tests", "p")
        cases = {
            "a guarded prefix": (_guards(guards=_prefix_guards(["fx/tree"])), "fx/tree/a/b.txt"),
            "a guarded file": (_guards(guards=_prefix_guards(["svc/t.py"])), "svc/t.py"),
            "beside a predicate": (_guards(beside=beside), "svc/tests/helper/h.py"),
            "a closure package": (_guards(closure={"lib": ["p"]}), "lib/data/x.txt"),
            "the root of a closure": (_guards(closure={"": ["p"]}), "docs/x.md"),
            "an archive on the import path": (
                _guards(import_roots={"v/lib.zip": ["p"]}),
                "v/lib.zip",
            ),
            "a shadowing module": (_guards(import_roots={"svc": ["p"]}), "svc/unittest.py"),
            "a shadowing package": (_guards(import_roots={"svc": ["p"]}), "svc/os/__init__.py"),
            "a namespace package": (
                _guards(import_roots={"svc": ["p"]}),
                "svc/google/protobuf/x.py",
            ),
            "a BUILD file": (_guards(excused={"docs"}), "docs/BUILD"),
            "Starlark": (_guards(), "a/defs.bzl"),
            "Bazel's configuration": (_guards(), "a/ci.bazelrc"),
            "the launcher hook": (_guards(), "nested/tools/bazel"),
            "an import hook": (_guards(), "a/conftest.py"),
            "a service loader": (_guards(), "a/META-INF/services/x.Provider"),
            "a test runner's configuration": (_guards(), "a/pyproject.toml"),
            "a file at the root": (_guards(beside=_prefix_guards([""])), "x.py"),
        }
        for what, (guards, path) in cases.items():
            with self.subTest(what):
                self.assertNotEqual(guards.whys(path)[1], [], f"{what}: the guard must fire")
                self.assertFalse(guards.clear(path), f"{what}: {path} must trip a wire")


if __name__ == "__main__":
    absltest.main()
