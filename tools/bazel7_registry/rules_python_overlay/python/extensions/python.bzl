"""The Bazel 7.7.1 lane's stand-in for rules_python's `python` extension.

Debian's rules_python (0.22.1) downloads a hermetic interpreter for each
`python.toolchain` tag, and its tag has another shape than the 0.31+ one users
write. On this offline lane no interpreter is downloaded: the tags are
accepted and ignored. `pythons_hub` (the repository rules_python's
MODULE.bazel asks for) holds one toolchain, the sid root's /usr/bin/python3
with Debian's Python packages; tools/bazel7.bazelrc registers it with
--extra_toolchains. Not the autodetecting toolchain: that one runs whatever
`python3` the caller's PATH names first, and PATH holds host directories.
"""

_HUB = """\
# The sid root's Python, the only one the offline tools/bazel7 lane has.
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

py_runtime(
    name = "python3",
    interpreter_path = "/usr/bin/python3",
    python_version = "PY3",
    stub_shebang = "#!/usr/bin/python3",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":python3",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""

def _hub_impl(rctx):
    rctx.file("WORKSPACE", "")
    rctx.file("BUILD.bazel", _HUB)

_hub = repository_rule(implementation = _hub_impl)

def _python_impl(_module_ctx):
    _hub(name = "pythons_hub")

python = module_extension(
    implementation = _python_impl,
    doc = "Accepts `python.toolchain` tags and downloads nothing (tools/bazel7 lane).",
    tag_classes = {
        "toolchain": tag_class(
            attrs = {
                "configure_coverage_tool": attr.bool(),
                "ignore_root_user_error": attr.bool(),
                "is_default": attr.bool(),
                "name": attr.string(),
                "python_version": attr.string(mandatory = True),
            },
        ),
    },
)
