"""Stand-in for @rules_python//python:defs.bzl on Bazel 4.2.3: the native rules.

BUILD files load Python rules from here exactly as they would from the real
rules_python on Bazel >= 7, so the same BUILD file is right for both.
"""

load("//python:builtin_py_info.bzl", "BUILTIN_PY_INFO")

# Bazel 4.2.3 still has the global; Bazel 9 only rules_python's.
PyInfo = BUILTIN_PY_INFO
py_binary = native.py_binary
py_library = native.py_library
py_runtime = native.py_runtime
py_test = native.py_test
