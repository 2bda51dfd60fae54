"""`sealed_fixtures`: a fixture tree plus the digest committed beside it."""

load("//rules:providers.bzl", "SealedFixturesInfo")
load(":names.bzl", "NAMES_PROBE", "names_params")
load(":paths.bzl", "covers", "normalize_prefix", "prefix_error", "repo_relative")
load(":python.bzl", "ACTION_TOOLCHAIN", "PYTHON_TOOLCHAIN", "python_interpreter")
load(":zipapp.bzl", "PythonAppInfo")

def _tree_root(ctx):
    package = ctx.label.package
    if ctx.attr.root:
        problem = prefix_error(ctx.attr.root)
        if problem:
            fail("%s: root = %r is %s." % (ctx.label, ctx.attr.root, problem))
        return (package + "/" if package else "") + normalize_prefix(ctx.attr.root)
    if not package:
        fail("%s: a sealed_fixtures target in the root package must set `root` to its tree's directory." % ctx.label)
    return package

def _sealed_fixtures_impl(ctx):
    root = _tree_root(ctx)
    seal_path = repo_relative(ctx.file.seal)

    # Built for every gate run, matched or not: a generated seal's rule (a `local = 1`
    # genrule) would run on the host before anything is judged.
    if not ctx.file.seal.is_source:
        fail(("%s: the seal %s is generated; it must be the committed seal file " +
              "(`bazel run :%s.update_seal` writes it).") % (ctx.label, ctx.file.seal.short_path, ctx.label.name))
    if covers(root, seal_path) and not seal_path.endswith(".seal"):
        fail(("%s: the seal file %s is inside the tree %s but does not end in `.seal`, so the " +
              "seal would hash itself. Name it `<something>.seal`.") % (ctx.label, seal_path, root))

    files = []
    rel_paths = []
    for src in ctx.files.srcs:
        rel = repo_relative(src)
        if not src.is_source:
            fail("%s: %s is generated; sealed fixtures must be committed source files." % (ctx.label, src.short_path))
        if not covers(root, rel) or rel == root:
            fail("%s: %s is outside the fixture tree %s; list only files under it (or set `root`)." % (ctx.label, rel, root))
        if rel.endswith(".seal"):
            continue  # The pipeline skips seal files: `! -name '*.seal'`.
        files.append(src)
        rel_paths.append(rel)

    actual = ctx.actions.declare_file(ctx.label.name + ".actual.seal")
    args = ctx.actions.args()
    args.add("--out", actual)
    args.add("--repo_root", ctx.label.workspace_root or ".")
    args.add("--names_probe", NAMES_PROBE)
    sealer = ctx.attr._sealer[PythonAppInfo]
    python = python_interpreter(ctx)
    ctx.actions.run(
        executable = python.exec_path,
        arguments = [sealer.archive.path, args, names_params(ctx, [rel_paths])],
        inputs = depset(files + [sealer.archive], transitive = [python.files]),
        outputs = [actual],
        mnemonic = "FixtureSeal",
        progress_message = "Sealing fixtures %s (%d files)" % (root, len(files)),
        **ACTION_TOOLCHAIN
    )
    return [
        DefaultInfo(
            files = depset([actual]),
            runfiles = ctx.runfiles(files = files + [ctx.file.seal, actual]),
        ),
        SealedFixturesInfo(
            label = ctx.label,
            root = root,
            files = depset(files),
            expected_seal = ctx.file.seal,
            actual_seal = actual,
            rel_paths = rel_paths,
        ),
    ]

sealed_fixtures_rule = rule(
    implementation = _sealed_fixtures_impl,
    doc = """A fixture tree sealed by a committed digest.

The actual seal is computed at build time, byte-compatible with
`find ROOT -type f ! -name '*.seal' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum`
run from the repository root. A mismatch with the committed `seal` is data for
the gate (a fixture fault), never a build error.""",
    attrs = {
        "srcs": attr.label_list(allow_files = True, doc = "Every file of the tree."),
        "seal": attr.label(
            allow_single_file = True,
            mandatory = True,
            doc = "The committed seal file (a source file, never generated): the pipeline's output line `<hex>  -`, or bare hex.",
        ),
        "root": attr.string(doc = "The tree's directory relative to this package; default: the package itself."),
        "_sealer": attr.label(
            default = Label("//tools:seal_files"),
            providers = [PythonAppInfo],
            cfg = "exec",
        ),
    },
    toolchains = [PYTHON_TOOLCHAIN],
)

def _seal_updater_impl(ctx):
    info = ctx.attr.fixtures[SealedFixturesInfo]
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    ctx.actions.write(script, is_executable = True, content = """\
#!/usr/bin/env bash
# Rewrites the committed seal of {root} from the tree as it is now.
set -euo pipefail
if [[ -z "${{BUILD_WORKSPACE_DIRECTORY:-}}" ]]; then
  echo "run this with: bazel run {label}" >&2
  exit 2
fi
target="$BUILD_WORKSPACE_DIRECTORY/{seal}"
# Not cp: the computed seal is a read-only build output; the committed file is not.
cat "{actual}" >"$target.tmp"
chmod 0644 "$target.tmp"
mv "$target.tmp" "$target"
echo "wrote {seal}: $(cat "$target")"
echo "commit it in a reviewed change of its own, together with the fixture edits."
""".format(
        root = info.root,
        label = ctx.label,
        seal = repo_relative(info.expected_seal),
        actual = info.actual_seal.short_path,
    ))
    return [DefaultInfo(executable = script, runfiles = ctx.runfiles(files = [info.actual_seal]))]

seal_updater = rule(
    implementation = _seal_updater_impl,
    doc = "`bazel run` target that rewrites a `sealed_fixtures` seal file in the source tree.",
    executable = True,
    attrs = {
        "fixtures": attr.label(
            mandatory = True,
            providers = [SealedFixturesInfo],
            doc = "Set by the macro: the `sealed_fixtures` target whose seal file this rewrites.",
        ),
    },
)
