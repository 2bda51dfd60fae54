"""Stand-in for @com_google_protobuf//bazel:py_proto_library.bzl on Bazel 4.2.3.

Runs `protoc --python_out` over the direct sources of `proto_library` deps and
provides the generated `_pb2.py` files as a Python library, importable by the
same module path as protobuf's own rule gives (`from proto import x_pb2`).
"""

# Bazel 4.2.3 has ProtoInfo only as a global; this shim never runs on Bazel >= 7.
# buildifier: disable=native-proto-info
def _py_proto_library_impl(ctx):
    outputs = []
    for dep in ctx.attr.deps:
        info = dep[ProtoInfo]
        root = info.proto_source_root
        if root in ("", "."):
            root = ""
        for src in info.direct_sources:
            relative = src.path
            if root and relative.startswith(root + "/"):
                relative = relative[len(root) + 1:]
            stem = relative[:-len(".proto")]
            package = ctx.label.package + "/" if ctx.label.package else ""
            if not stem.startswith(package):
                fail("%s: declare py_proto_library in the package of %s" % (ctx.label, src.short_path))
            out = ctx.actions.declare_file(stem[len(package):] + "_pb2.py")
            outputs.append(out)

        out_root = ctx.bin_dir.path
        if ctx.label.workspace_root:
            out_root += "/" + ctx.label.workspace_root
        args = ctx.actions.args()
        args.add("--python_out=" + out_root)
        args.add_all(info.transitive_proto_path, format_each = "-I%s")
        args.add_all(info.direct_sources)
        ctx.actions.run(
            executable = ctx.executable._protoc,
            arguments = [args],
            inputs = info.transitive_sources,
            outputs = outputs[-len(info.direct_sources):],
            mnemonic = "PyProtoCompile",
            progress_message = "Generating Python code for %s" % dep.label,
        )
    files = depset(outputs)
    return [
        DefaultInfo(files = files, runfiles = ctx.runfiles(files = outputs)),
        PyInfo(transitive_sources = files),
    ]

py_proto_library = rule(
    implementation = _py_proto_library_impl,
    doc = "Python code generated from `proto_library` targets (Bazel 4.2.3 stand-in).",
    attrs = {
        # buildifier: disable=native-proto-info
        "deps": attr.label_list(providers = [ProtoInfo], doc = "`proto_library` targets."),
        "_protoc": attr.label(
            default = Label("@com_google_protobuf//:protoc"),
            executable = True,
            cfg = "exec",
        ),
    },
)
