"""Macros for the predicates in //checks."""

load("@rules_python//python:defs.bzl", "py_test")

def checked_py_test(name, srcs, deps = [], **kwargs):
    """A py_test that can use the shared helpers of //checks.

    Args:
      name: the test's name.
      srcs: its sources.
      deps: its dependencies; //checks:helpers is added.
      **kwargs: any other py_test attribute.
    """
    py_test(
        name = name,
        srcs = srcs,
        deps = deps + ["//checks:helpers"],
        **kwargs
    )
