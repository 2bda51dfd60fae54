"""Bazel 4.2.3's global PyInfo, under a name defs.bzl can re-export as `PyInfo`."""

BUILTIN_PY_INFO = PyInfo  # buildifier: disable=native-py
