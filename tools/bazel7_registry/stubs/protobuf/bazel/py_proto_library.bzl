"""protobuf's `py_proto_library`, for the offline Bazel 7.7.1 lane.

Runs protoc's Python generator over the direct sources of each
`proto_library` dependency and provides the `_pb2.py` files as a Python
library, importable by the proto's path (`from proto import x_pb2` for
`proto/x.proto`), as protobuf's own rule gives them. A proto outside this
rule's package is refused: its output could not be declared here.
"""

load("@rules_python//python:defs.bzl", "PyInfo")

# ProtoInfo is still a global on Bazel 7; this module is only ever used there.
# buildifier: disable=native-proto-info
def _py_proto_library_impl(ctx):
    outputs = []
    package = ctx.label.package + "/" if ctx.label.package else ""
    for dep in ctx.attr.deps:
        info = dep[ProtoInfo]
        root = info.proto_source_root
        generated = []
        for src in info.direct_sources:
            relative = src.path
            if root not in ("", ".") and relative.startswith(root + "/"):
                relative = relative[len(root) + 1:]
            if not relative.startswith(package):
                fail("%s: declare py_proto_library in the package of %s" % (ctx.label, src.short_path))
            stem = relative[len(package):-len(".proto")]
            generated.append(ctx.actions.declare_file(stem + "_pb2.py"))
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
            outputs = generated,
            mnemonic = "PyProtoCompile",
            progress_message = "Generating Python code for %s" % dep.label,
        )
        outputs.extend(generated)
    files = depset(outputs)
    return [
        DefaultInfo(files = files, runfiles = ctx.runfiles(files = outputs)),
        PyInfo(transitive_sources = files),
    ]

py_proto_library = rule(
    implementation = _py_proto_library_impl,
    doc = "Python code generated from `proto_library` targets (tools/bazel7 lane).",
    attrs = {
        # buildifier: disable=native-proto-info
        "deps": attr.label_list(providers = [ProtoInfo], doc = "`proto_library` targets."),
        "_protoc": attr.label(
            default = Label("//:protoc"),
            executable = True,
            cfg = "exec",
        ),
    },
)
