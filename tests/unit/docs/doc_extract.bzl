"""Bazel's own doc extraction of the rule files, where Bazel has it (>= 7)."""

load("@rules_python//python:defs.bzl", "py_test")

# What rules/private/gate.bzl loads from another repository.
_EXTERNAL_DEPS = ["@rules_python//python:defs_bzl"]

def bazel_doc_extract_test(name, srcs, bzl_deps, **kwargs):
    """A `starlark_doc_extract` per file in `srcs`, and the py_test `NAME.py` that reads them.

    Bazel 4.2.3 has no `starlark_doc_extract`: there the macro declares nothing.

    Args:
      name: the test's name; its source is `NAME.py`.
      srcs: .bzl files to extract.
      bzl_deps: bzl_library targets that hold everything they load.
      **kwargs: attributes of the py_test (`deps`, `size`, ...).
    """
    if not hasattr(native, "starlark_doc_extract"):
        return
    extracts = []
    for index, src in enumerate(srcs):
        extract = "bazel_doc_extracts_%d" % index
        native.starlark_doc_extract(name = extract, src = src, deps = bzl_deps + _EXTERNAL_DEPS, testonly = True)
        extracts.append(":%s.textproto" % extract)
    py_test(
        name = name,
        srcs = [name + ".py"],
        data = extracts + bzl_deps,
        **kwargs
    )
