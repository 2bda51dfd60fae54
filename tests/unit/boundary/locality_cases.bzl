"""Cases of locality matching, shared by Starlark and Python.

The gate rule picks the properties to run with `matched_localities` and
`normalize_path` (rules/private/paths.bzl); the evaluator decides which were
required with `normalize_path` and `LocalityIndex` (tools/agent_gate/core/locality.py),
and the CLI with `covers`. boundary_tests.bzl and boundary_test.py run every
row through each of them. Keep this file literal data only: the Python test reads
it with ast.literal_eval.

PATH_CASES: a changed path and its normalized form; None when the evaluator
rejects it (an error, so never promote) and the rule matches nothing with it.

MATCH_CASES: properties' localities (as a BUILD file spells them), the changed
paths, and the ids of the properties the diff touches.
"""

PATH_CASES = [
    {"path": "api/x.py", "normal": "api/x.py"},
    {"path": "./api/x.py", "normal": "api/x.py"},
    {"path": "././api/x.py", "normal": "api/x.py"},
    {"path": "api//x.py", "normal": "api/x.py"},
    {"path": "api/./x.py", "normal": "api/x.py"},
    {"path": "api/", "normal": "api"},
    {"path": "api/x.py/", "normal": "api/x.py"},
    {"path": "...", "normal": "..."},
    {"path": "..x/y", "normal": "..x/y"},
    {"path": " api/x ", "normal": " api/x "},
    {"path": "api/x\ty", "normal": "api/x\ty"},
    {"path": "a,b/%2C/%252C", "normal": "a,b/%2C/%252C"},
    {"path": "src/ü/ñ.py", "normal": "src/ü/ñ.py"},
    {"path": "", "normal": None},
    {"path": ".", "normal": None},
    {"path": "./", "normal": None},
    {"path": "//", "normal": None},
    {"path": "/", "normal": None},
    {"path": "/api/x.py", "normal": None},
    {"path": "..", "normal": None},
    {"path": "../x", "normal": None},
    {"path": "api/../x", "normal": None},
    {"path": "api/..", "normal": None},
    {"path": "./../x", "normal": None},
    {"path": "api/x\n", "normal": None},
    {"path": "api/x\rb", "normal": None},
    {"path": "api/x\0b", "normal": None},
]

MATCH_CASES = [
    {
        "name": "a component, not a string prefix",
        "localities": {"a": ["src/a"], "ab": ["src/ab"]},
        "paths": ["src/ab/x.py"],
        "matched": ["ab"],
    },
    {
        "name": "the shorter of two names sharing a prefix string",
        "localities": {"a": ["src/a"], "ab": ["src/ab"]},
        "paths": ["src/a/x.py"],
        "matched": ["a"],
    },
    {
        "name": "a file whose name extends the prefix",
        "localities": {"a": ["src/a"]},
        "paths": ["src/ab", "src/a.py", "src/a_v2/x.py"],
        "matched": [],
    },
    {
        "name": "a file as the prefix",
        "localities": {"module": ["MODULE.bazel"]},
        "paths": ["MODULE.bazel"],
        "matched": ["module"],
    },
    {
        "name": "a file extending a file prefix",
        "localities": {"module": ["MODULE.bazel"]},
        "paths": ["MODULE.bazel.lock"],
        "matched": [],
    },
    {
        "name": "a trailing slash in the locality",
        "localities": {"handlers": ["api/handlers/"]},
        "paths": ["api/handlers_v2/x.py", "api/handlers/x.py"],
        "matched": ["handlers"],
    },
    {
        "name": "nested localities both match",
        "localities": {"api": ["api"], "handlers": ["api/handlers"]},
        "paths": ["api/handlers/x.py"],
        "matched": ["api", "handlers"],
    },
    {
        "name": "the outer locality alone",
        "localities": {"api": ["api"], "handlers": ["api/handlers"]},
        "paths": ["api/other.py"],
        "matched": ["api"],
    },
    {
        "name": "a parent directory of the prefix does not match",
        "localities": {"deep": ["a/b/c"]},
        "paths": ["a/b", "a", "a/b/cd"],
        "matched": [],
    },
    {
        "name": "the prefix itself as a path",
        "localities": {"api": ["api"]},
        "paths": ["api"],
        "matched": ["api"],
    },
    {
        "name": "a leading ./ is the same file",
        "localities": {"api": ["api"]},
        "paths": ["./api/x.py"],
        "matched": ["api"],
    },
    {
        "name": "an empty component is the same file",
        "localities": {"handlers": ["api/handlers"]},
        "paths": ["api//handlers/x.py"],
        "matched": ["handlers"],
    },
    {
        "name": "a . component is the same file",
        "localities": {"handlers": ["api/handlers"]},
        "paths": ["api/./handlers/x.py"],
        "matched": ["handlers"],
    },
    {
        "name": "a trailing slash in the path",
        "localities": {"api": ["api"]},
        "paths": ["api/"],
        "matched": ["api"],
    },
    {
        "name": "a .. component matches nothing (the evaluator rejects the path)",
        "localities": {"api": ["api"], "secret": ["secret"]},
        "paths": ["api/../secret/key", "../api/x.py", "api/.."],
        "matched": [],
    },
    {
        "name": "an absolute path matches nothing",
        "localities": {"api": ["api"]},
        "paths": ["/api/x.py", "//api/x.py"],
        "matched": [],
    },
    {
        "name": "control characters match nothing",
        "localities": {"api": ["api"]},
        "paths": ["api/x\n", "api/x\rb", "api/x\0b"],
        "matched": [],
    },
    {
        "name": "no trimming: a space is part of the name",
        "localities": {"api": ["api"]},
        "paths": [" api/x.py", "api /x.py"],
        "matched": [],
    },
    {
        "name": "a space inside a locality",
        "localities": {"spaced": ["my dir"]},
        "paths": ["my dir/x"],
        "matched": ["spaced"],
    },
    {
        "name": "non-ASCII names, per component",
        "localities": {"u": ["src/ü"]},
        "paths": ["src/üx/a.py", "src/u/a.py"],
        "matched": [],
    },
    {
        "name": "non-ASCII names match",
        "localities": {"u": ["src/ü"]},
        "paths": ["src/ü/ñ.py"],
        "matched": ["u"],
    },
    {
        "name": "a comma and percent escapes are plain bytes of a name",
        "localities": {"comma": ["a,b"], "escaped": ["%2C"], "twice": ["%252C"]},
        "paths": ["a,b/x", "%2C/y"],
        "matched": ["comma", "escaped"],
    },
    {
        "name": "a decoded comma does not match its escape",
        "localities": {"escaped": ["%2C"], "percent": ["%25"]},
        "paths": [",/x", "%/y"],
        "matched": [],
    },
    {
        "name": "an empty diff",
        "localities": {"api": ["api"]},
        "paths": [],
        "matched": [],
    },
    {
        "name": "two properties on one prefix",
        "localities": {"one": ["api"], "two": ["api"]},
        "paths": ["api/x.py"],
        "matched": ["one", "two"],
    },
    {
        "name": "one property listing overlapping prefixes",
        "localities": {"one": ["api", "api/handlers"], "other": ["store"]},
        "paths": ["api/handlers/x.py", "api/y.py"],
        "matched": ["one"],
    },
    {
        "name": "a later path matches after unmatched and rejected ones",
        "localities": {"api": ["api"], "store": ["store"]},
        "paths": ["docs/x.md", "../x", "store/deep/c.py"],
        "matched": ["store"],
    },
]
