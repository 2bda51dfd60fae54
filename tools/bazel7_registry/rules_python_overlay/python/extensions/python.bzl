"""The Bazel 7.7.1 lane's stand-in for rules_python's `python` extension.

Debian's rules_python (0.22.1) downloads a hermetic interpreter for each
`python.toolchain` tag, and its tag has another shape than the 0.31+ one users
write. On this offline lane no interpreter is downloaded: the tags are
accepted and ignored, and Python actions use the toolchain rules_python's own
MODULE.bazel registers (`@bazel_tools//tools/python:autodetecting_toolchain`),
which runs the sid root's /usr/bin/python3 with Debian's Python packages.
`pythons_hub` is the repository rules_python's MODULE.bazel asks for.
"""

def _empty_repository_impl(rctx):
    rctx.file("BUILD.bazel", "")
    rctx.file("WORKSPACE", "")

_empty_repository = repository_rule(implementation = _empty_repository_impl)

def _python_impl(_module_ctx):
    _empty_repository(name = "pythons_hub")

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
