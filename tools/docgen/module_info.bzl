"""Bazel's own doc extraction of the rule files, where Bazel has it (>= 7).

docs/rules.md's generator reads these ModuleInfo files instead of the syntax
trees when it is given them (`--module_info`): the update target and the diff
test pass them on Bazel >= 7. Bazel 4.2.3 has no `starlark_doc_extract`: there
nothing is declared and nothing is passed.
"""

# The public files, and every file that defines a rule one of their macros declares.
_SRCS = [
    "//rules:defs.bzl",
    "//rules:providers.bzl",
    "//rules:repositories.bzl",
    "//rules:settings.bzl",
    "//rules/private:gate.bzl",
    "//rules/private:property.bzl",
    "//rules/private:sealed_fixtures.bzl",
]

# bzl_library targets holding everything those files load.
_DEPS = [
    "//rules:defs",
    "//rules:repositories",
    "//rules:settings",
    "@rules_python//python:defs_bzl",
]

def _available():
    return hasattr(native, "starlark_doc_extract")

# The extracts' name prefix: the other two functions name them from BUILD files elsewhere.
_NAME = "module_info"

def _extract(src):
    return "%s_%s" % (_NAME, src.split(":")[-1][:-len(".bzl")])

def module_info_extracts(name):
    """Declares one `starlark_doc_extract` NAME_<file> per rule file (none on Bazel 4.2.3).

    Args:
      name: "module_info", the name the other functions of this file expect.
    """
    if name != _NAME:
        fail("module_info_extracts: name must be %r" % _NAME)
    if not _available():
        return
    for src in _SRCS:
        native.starlark_doc_extract(
            name = _extract(src),
            src = src,
            deps = _DEPS,
            visibility = ["//tests/unit/docs:__pkg__"],
        )

def module_info_data():
    """The extracted ModuleInfo text files, for `data` ([] on Bazel 4.2.3)."""
    if not _available():
        return []
    return ["//tools/docgen:%s.textproto" % _extract(src) for src in _SRCS]

def module_info_args():
    """The generator's `--module_info` arguments, one per file ([] on Bazel 4.2.3)."""
    return ["--module_info=$(rlocationpath %s)" % label for label in module_info_data()]
