"""Cases of locality-prefix validation, shared by Starlark and Python.

`prefix_error` (rules/private/paths.bzl) and `validate_prefix`
(tools/agent_gate/core/locality.py) both run every row: boundary_tests.bzl and
boundary_test.py. `valid` says whether the prefix is accepted, `normal` what it
normalizes to (None when invalid). Keep this file literal data only: the Python
test reads it with ast.literal_eval.
"""

PREFIX_CASES = [
    {"prefix": "api", "valid": True, "normal": "api"},
    {"prefix": "api/handlers", "valid": True, "normal": "api/handlers"},
    {"prefix": "api/handlers/", "valid": True, "normal": "api/handlers"},
    {"prefix": "MODULE.bazel", "valid": True, "normal": "MODULE.bazel"},
    {"prefix": "a.b/c-d_e", "valid": True, "normal": "a.b/c-d_e"},
    # Names that only begin like `.` or `..` are ordinary names.
    {"prefix": "..a", "valid": True, "normal": "..a"},
    {"prefix": "a/.b", "valid": True, "normal": "a/.b"},
    {"prefix": "...", "valid": True, "normal": "..."},
    # Bytes git allows in a name: spaces, commas, percent escapes, non-ASCII.
    {"prefix": "a b", "valid": True, "normal": "a b"},
    {"prefix": "a\tb", "valid": True, "normal": "a\tb"},
    {"prefix": " a", "valid": True, "normal": " a"},
    {"prefix": "a,b", "valid": True, "normal": "a,b"},
    {"prefix": "%2C", "valid": True, "normal": "%2C"},
    {"prefix": "%252C/x", "valid": True, "normal": "%252C/x"},
    {"prefix": "src/ü/ñ", "valid": True, "normal": "src/ü/ñ"},
    # Empty, absolute, or with empty components.
    {"prefix": "", "valid": False, "normal": None},
    {"prefix": "/", "valid": False, "normal": None},
    {"prefix": "//", "valid": False, "normal": None},
    {"prefix": "/api", "valid": False, "normal": None},
    {"prefix": "/api/", "valid": False, "normal": None},
    {"prefix": "//api", "valid": False, "normal": None},
    {"prefix": "a//b", "valid": False, "normal": None},
    {"prefix": "a//", "valid": False, "normal": None},
    {"prefix": "a/b//", "valid": False, "normal": None},
    # `.` and `..` components, anywhere.
    {"prefix": ".", "valid": False, "normal": None},
    {"prefix": "./", "valid": False, "normal": None},
    {"prefix": "./a", "valid": False, "normal": None},
    {"prefix": "a/.", "valid": False, "normal": None},
    {"prefix": "a/./b", "valid": False, "normal": None},
    {"prefix": "..", "valid": False, "normal": None},
    {"prefix": "../", "valid": False, "normal": None},
    {"prefix": "../a", "valid": False, "normal": None},
    {"prefix": "a/..", "valid": False, "normal": None},
    {"prefix": "a/../b", "valid": False, "normal": None},
    {"prefix": "a/../", "valid": False, "normal": None},
    # Backslashes and control characters.
    {"prefix": "a\\b", "valid": False, "normal": None},
    {"prefix": "\\", "valid": False, "normal": None},
    {"prefix": "a\nb", "valid": False, "normal": None},
    {"prefix": "a/\n", "valid": False, "normal": None},
    {"prefix": "a\rb", "valid": False, "normal": None},
    {"prefix": "a\0b", "valid": False, "normal": None},
]
