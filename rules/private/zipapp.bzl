"""`python_zipapp`: one of agent_gate's entry points and its modules, compiled, in one archive.

A sandboxed action gets one symlink per input file. A `py_binary`'s runfiles tree
is every module, and twice each for an external repository under
`--legacy_external_runfiles`: about 200 inputs per double run, which cost more
than Python's own start. The archive is one input. It holds the modules of this
repository that `deps` take and those of the `site` libraries (pip packages),
each with its `.pyc`, compiled by the toolchain's interpreter and checked
against its source's hash on import (a `.pyc` for other bytes, or another
interpreter's, is never used: Python compiles the source). What Python cannot
import from an archive (protobuf's native module) stays in runfiles, on
`PYTHONPATH`, beside the archive's part of the same namespace package.
"""

load("@rules_python//python:defs.bzl", "PyInfo")
load(":paths.bzl", "repo_relative", "rlocation")
load(":python.bzl", "ACTION_TOOLCHAIN", "PYTHON_TOOLCHAIN", "python_interpreter")

PythonAppInfo = provider(
    doc = "A `python_zipapp`: run as `python ARCHIVE`, with `site` on PYTHONPATH.",
    fields = {
        "archive": "File: the zip archive; `python` runs its `__main__`.",
        "site": "list of runfiles paths (`<repo>/<dir>`): the import roots of the `site` libraries, for what of them stays in runfiles.",
    },
)

def _import_roots(ctx, deps):
    """This repository's import roots, repo-relative, longest first; its root last."""
    own = rlocation(ctx, ctx.file.main).split("/", 1)[0] + "/"
    roots = {}
    for dep in deps:
        for root in dep[PyInfo].imports.to_list():
            if root.startswith(own):
                roots[root[len(own):]] = True
    return sorted(roots, key = _longest_first) + [""]

def _longest_first(root):
    return -len(root)

def _archive_name(path, roots):
    for root in roots:
        if not root:
            return path
        if path.startswith(root + "/"):
            return path[len(root) + 1:]
    fail("unreachable: the repository's root is the last import root")

def _site_modules(ctx, site):
    """The `site` libraries' modules, by name in the archive; their runfiles left; their roots.

    A module's name is its path below the library's import root; what is not a module
    (a native extension, data) stays in runfiles, on PYTHONPATH; so does all of a
    library that is not `_packable`.
    """
    modules = {}
    rest = []
    roots = []
    for library in site:
        imports = library[PyInfo].imports.to_list()
        roots.extend(imports)
        sources = library[PyInfo].transitive_sources.to_list()
        files = library[DefaultInfo].default_runfiles.files.to_list()
        if not _packable(sources, files):
            rest.append(library[DefaultInfo].default_runfiles.files)
            continue
        for source in sources:
            path = rlocation(ctx, source)
            root = [root for root in imports if path.startswith(root + "/")]
            if not root:
                fail("%s: %s is below none of its library's import roots %s." % (library.label, path, imports))
            modules[path[len(root[0]) + 1:]] = source
        rest.append(depset([file for file in files if file.extension not in ("py", "pyc")]))
    return modules, depset(transitive = rest), roots

def _packable(sources, files):
    """Whether a library's modules (`sources`) can leave its native modules behind in runfiles (`files`).

    They can when each native module sits in a namespace package (protobuf's
    `google/_upb/`), which Python assembles from the archive and the directory
    alike; not when one sits in a regular package (`google/protobuf/pyext/` of
    older protobuf), whose `__path__` would be the archive's alone.
    """
    regular = {source.dirname: True for source in sources if source.basename == "__init__.py"}
    for file in files:
        if file.extension == "so" and file.dirname in regular:
            return False
    return True

def _python_zipapp_impl(ctx):
    python = python_interpreter(ctx)
    roots = _import_roots(ctx, ctx.attr.deps)
    modules = {}
    for dep in ctx.attr.deps:
        for source in dep[PyInfo].transitive_sources.to_list():
            if source.owner.workspace_root == ctx.label.workspace_root:
                modules[_archive_name(repo_relative(source), roots)] = source
    if ctx.file.main not in modules.values():
        fail("%s: main %s is not a module of deps." % (ctx.label, ctx.file.main.short_path))
    site_modules, site_files, site_roots = _site_modules(ctx, ctx.attr.site)
    archive = ctx.actions.declare_file(ctx.label.name + ".zip")
    args = ctx.actions.args()
    args.add("--out", archive)
    args.add("--main", ctx.attr.main_module)
    for flag, table in (("--module", modules), ("--site_module", site_modules)):
        for name in sorted(table):
            args.add(flag, name)
            args.add(table[name])
    ctx.actions.run(
        executable = python.exec_path,
        arguments = [ctx.file._pack.path, args],
        inputs = depset([ctx.file._pack] + modules.values() + site_modules.values(), transitive = [python.files]),
        outputs = [archive],
        mnemonic = "PythonZipapp",
        progress_message = "Packing %d Python modules into %s" % (len(modules) + len(site_modules), archive.short_path),
        **ACTION_TOOLCHAIN
    )
    return [
        DefaultInfo(
            files = depset([archive]),
            runfiles = ctx.runfiles(files = [archive], transitive_files = site_files),
        ),
        PythonAppInfo(archive = archive, site = site_roots),
    ]

python_zipapp = rule(
    implementation = _python_zipapp_impl,
    doc = "One entry point of agent_gate's tool as one compiled archive (see this file's docstring).",
    attrs = {
        "main": attr.label(
            allow_single_file = [".py"],
            mandatory = True,
            doc = "The entry point's source; a module of `deps`.",
        ),
        "main_module": attr.string(
            mandatory = True,
            doc = "The entry point's module name, which the archive's `__main__` runs as `__main__`.",
        ),
        "deps": attr.label_list(
            providers = [PyInfo],
            mandatory = True,
            doc = "`py_library` targets whose modules of this repository go into the archive.",
        ),
        "site": attr.label_list(
            providers = [PyInfo],
            doc = "Libraries of other repositories the entry point imports (pip packages): their " +
                  "modules go into the archive as they are, namespace packages too; their other " +
                  "files (native extensions) stay in runfiles, on PYTHONPATH.",
        ),
        "_pack": attr.label(
            default = Label("//tools:agent_gate/actions/zipapp_main.py"),
            allow_single_file = True,
        ),
    },
    toolchains = [PYTHON_TOOLCHAIN],
)
