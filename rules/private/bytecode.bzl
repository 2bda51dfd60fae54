"""`python_bytecode`: a package's Python modules compiled once, by the build.

An action cannot keep what Python compiles: its sandbox is thrown away, so every
action that imports a module would compile it again. This rule compiles the
modules of its own package (sources or generated) that the libraries take, with
the toolchain's interpreter, into the `__pycache__` directory beside each one: in
runfiles, where the interpreter looks. Each `.pyc` is checked against its source's hash when it
is imported, so one that does not match is never used.
"""

load("@rules_python//python:defs.bzl", "PyInfo")
load(":paths.bzl", "repo_relative")
load(":python.bzl", "ACTION_TOOLCHAIN", "PYTHON_TOOLCHAIN", "python_interpreter")

def _python_bytecode_impl(ctx):
    python = python_interpreter(ctx)
    prefix = ctx.label.package + "/" if ctx.label.package else ""
    by_directory = {}
    for library in ctx.attr.libraries:
        for source in library[PyInfo].transitive_sources.to_list():
            # Generated modules too (a `py_proto_library`'s), if this package generates them.
            path = repo_relative(source)
            if source.owner.workspace_root == ctx.label.workspace_root and path.startswith(prefix):
                directory = path[len(prefix):].rpartition("/")[0]
                by_directory.setdefault(directory, {})[source.path] = source
    if not by_directory:
        fail("%s: none of the modules of %s are in this package, so there is nothing to compile." %
             (ctx.label, ", ".join([str(library.label) for library in ctx.attr.libraries])))
    caches = []
    args = ctx.actions.args()
    inputs = []
    for directory in sorted(by_directory):
        cache = ctx.actions.declare_directory((directory + "/" if directory else "") + "__pycache__")
        caches.append(cache)
        args.add(cache.path)
        sources = by_directory[directory].values()
        args.add_all(sources, before_each = "--source")
        inputs.extend(sources)
    ctx.actions.run(
        executable = python.exec_path,
        arguments = [ctx.file._compile.path, args],
        inputs = depset([ctx.file._compile] + inputs, transitive = [python.files]),
        outputs = caches,
        mnemonic = "PythonBytecode",
        progress_message = "Compiling %d Python modules of %s" % (len(inputs), ctx.label),
        **ACTION_TOOLCHAIN
    )
    return [DefaultInfo(files = depset(caches), runfiles = ctx.runfiles(files = caches))]

python_bytecode = rule(
    implementation = _python_bytecode_impl,
    doc = "The `.pyc` of the modules of this package that `libraries` take, in runfiles " +
          "beside each module; a `data` dependency of the binaries that import them.",
    attrs = {
        "libraries": attr.label_list(
            providers = [PyInfo],
            mandatory = True,
            doc = "`py_library` targets whose modules in this package are compiled.",
        ),
        "_compile": attr.label(
            default = Label("//tools:agent_gate/actions/bytecode_main.py"),
            allow_single_file = True,
        ),
    },
    toolchains = [PYTHON_TOOLCHAIN],
)
