"""Cases of the top-level-module rule, shared by Starlark and Python.

`module_at` (rules/private/paths.bzl), which the gate rule uses to keep the
generated modules at the top of a test's import path, and `module_at`
(tools/agent_gate/core/quorum.py), which names the module a path would shadow,
both run every row: boundary_tests.bzl and boundary_test.py. `root` is the
directory the path would be a top-level module of, `module` its name. Keep this
file literal data only: the Python test reads it with ast.literal_eval.
"""

MODULE_CASES = [
    {"path": "unittest.py", "root": "", "module": "unittest"},
    {"path": "lib/unittest.py", "root": "lib", "module": "unittest"},
    {"path": "a/b/c/pytest.py", "root": "a/b/c", "module": "pytest"},
    # A package: its __init__ makes it a module of the directory above.
    {"path": "unittest/__init__.py", "root": "", "module": "unittest"},
    {"path": "vendor/absl/__init__.py", "root": "vendor", "module": "absl"},
    {"path": "vendor/absl/__init__.pyc", "root": "vendor", "module": "absl"},
    # Compiled modules and extension modules: the name ends at the first dot.
    {"path": "lib/unittest.pyc", "root": "lib", "module": "unittest"},
    {"path": "lib/unittest.cpython-311-x86_64-linux-gnu.so", "root": "lib", "module": "unittest"},
    {"path": "lib/_ctypes.abi3.so", "root": "lib", "module": "_ctypes"},
    # An __init__ at the top is the root's own module of that name.
    {"path": "__init__.py", "root": "", "module": "__init__"},
    # Names that only look like packages or modules.
    {"path": "lib/__init__x.py", "root": "lib", "module": "__init__x"},
    {"path": "lib/.hidden.py", "root": "lib", "module": ""},
    {"path": "lib/unittest", "root": "lib", "module": "unittest"},
    {"path": "lib/a b.py", "root": "lib", "module": "a b"},
    {"path": "lib/ü.py", "root": "lib", "module": "ü"},
]
