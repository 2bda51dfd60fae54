"""`agent_gate` and `full_strong_pass`: double runs as actions, the quorum as a test."""

load("//rules:providers.bzl", "AgentGateInfo", "PropertyInfo")
load("//rules:settings.bzl", "FlagValueInfo")
load(":names.bzl", "NAMES_PROBE", "names_params")
load(":paths.bzl", "decode_paths", "directories_holding", "matched_localities", "module_at", "module_roots", "normalize_prefix", "normalized_paths", "prefix_error", "repo_relative", "rlocation", "roots_at_or_below_a_file")
load(":python.bzl", "ACTION_TOOLCHAIN", "PYTHON_TOOLCHAIN", "editable_interpreter_files", "python_interpreter")
load(":zipapp.bzl", "PythonAppInfo")

def _flag(ctx, name):
    return getattr(ctx.attr, name)[FlagValueInfo].value

def _split(value):
    return [item.strip() for item in value.split(",") if item.strip()]

def _judged_by(ctx):
    """AgentGateInfo of what this target judges by: its own attributes, or its gate's."""
    if ctx.attr._full_pass:
        return ctx.attr.gate[AgentGateInfo]
    if ctx.attr.debt_cap < 0:
        fail("%s: debt_cap must be >= 0, got %d." % (ctx.label, ctx.attr.debt_cap))
    for attribute in ("rule_set_paths", "unobserved_ok"):
        for prefix in getattr(ctx.attr, attribute):
            problem = prefix_error(prefix)
            if problem:
                fail("%s: %s entry %r is %s." % (ctx.label, attribute, prefix, problem))

    # Built for every run: a generated ledger's rule (a `local = 1` genrule) would
    # run on the host before anything is judged.
    if not ctx.file.ledger.is_source:
        fail("%s: the ledger %s is generated; it must be a committed source file (e.g. ledger.txtpb)." %
             (ctx.label, ctx.file.ledger.short_path))
    return AgentGateInfo(
        properties = ctx.attr.properties,
        ledger = ctx.file.ledger,
        debt_cap = ctx.attr.debt_cap,
        rule_set_paths = ctx.attr.rule_set_paths,
        unobserved_ok = ctx.attr.unobserved_ok,
    )

def _catalog(ctx, judged_by):
    """PropertyInfo of every property, checked for duplicate ids."""
    seen = {}
    properties = []
    for target in judged_by.properties:
        info = target[PropertyInfo]
        if info.id in seen:
            fail("%s: property id %r is declared twice, by %s and %s; ids must be unique in a catalog." %
                 (ctx.label, info.id, seen[info.id], info.label))
        seen[info.id] = info.label
        properties.append((target, info))
    return properties

def _matched(properties, changed_paths, full_pass):
    """Properties to run: every strong one on a full pass, else those whose locality the diff touches."""
    if full_pass:
        return [(t, i) for (t, i) in properties if i.strength == "strong"]
    hit = matched_localities([info.locality for (_, info) in properties], changed_paths)
    return [properties[index] for index in hit]

def _top_level_modules(info):
    """The generated modules that are top-level modules of the test's import path.

    Its roots: the repository's, the directories `imports` names, the test's own
    sources' directories. `R/x.py` is module `x` of root `R`; `R/x/__init__.py` too.
    """
    roots = {"": True}
    for root in info.import_roots.to_list():
        roots[root] = True
    for src in info.predicate_srcs:
        roots[src.rpartition("/")[0]] = True
    return [path for path in info.generated_modules.to_list() if module_at(path).root in roots]

def _test_target(label):
    """The label as Bazel spells TEST_TARGET: `//pkg:name` in the main repository, also under bzlmod."""
    if not label.workspace_name:
        return "//%s:%s" % (label.package, label.name)
    return str(label)

def _double_run(ctx, target, info, run_id, runner):
    """One PropertyDoubleRun action: both runs of one property, results as data."""
    base = "%s.runs/%s" % (ctx.label.name, info.id)
    result = ctx.actions.declare_file(base + ".result.txtpb")
    logs = [ctx.actions.declare_file("%s.run%d.log" % (base, n)) for n in (1, 2)]
    args = ctx.actions.args()
    args.add("--property_id", info.id)

    # One argument: a label may begin with `@`, which the runner's argument parser
    # would otherwise take for a params file to read.
    args.add("--label=" + _test_target(info.label))
    args.add("--executable", info.executable)
    args.add("--workspace", info.workspace_name)
    args.add("--timeout_seconds", str(info.timeout_seconds))
    args.add("--run_id", run_id)

    # `--name=value`, one argument each: a word may begin with `@` or `-`.
    args.add_all(info.test_args, format_each = "--test_arg=%s")
    args.add_all(["%s=%s" % (key, info.test_env[key]) for key in sorted(info.test_env)], format_each = "--test_env=%s")
    args.add("--out", result)
    for log in logs:
        args.add("--log", log)
    fixture_inputs = []
    if info.fixtures:
        args.add("--repo_root", info.fixtures[0].label.workspace_root or ".")
    for fixtures in info.fixtures:
        fixture_inputs.append(fixtures.files)
    arguments = [args]
    if info.fixtures:
        args.add("--names_probe", NAMES_PROBE)
        arguments.append(names_params(ctx, [fixtures.rel_paths for fixtures in info.fixtures]))
    ctx.actions.run(
        executable = runner.python.exec_path,
        arguments = [runner.app.archive.path] + arguments,
        # The archive holds the tool; an inherited PYTHONPATH (an --action_env)
        # would put its own modules ahead of the standard library. Empty is unset.
        env = dict(ctx.configuration.default_shell_env, PYTHONPATH = ""),
        inputs = depset([runner.app.archive], transitive = fixture_inputs + [runner.python.files]),
        tools = [target[DefaultInfo].files_to_run],
        outputs = [result] + logs,
        mnemonic = "PropertyDoubleRun",
        progress_message = "Running property %s twice (%s)" % (info.id, info.label),
        # A run is a measurement, not a cacheable build step: never serve it
        # from a cache, and give it no network. A fresh --@agent_gate//:run_id
        # changes the command line, which forces both runs again.
        execution_requirements = {
            "block-network": "1",
            "no-cache": "1",
            "no-remote-cache": "1",
        },
        **ACTION_TOOLCHAIN
    )
    return result, logs

def _touched_import_roots(roots, shadowing, changed_files):
    """A test's import roots (the repository's root always) that a changed path may shadow from.

    A changed top-level module of one of them, or a changed archive that is one.
    """
    touched = [root for root in [""] + roots if root in shadowing]
    touched.extend(roots_at_or_below_a_file(roots, changed_files))
    return sorted({root: None for root in touched})

def _gate_impl(ctx):
    full_pass = ctx.attr._full_pass
    judged_by = _judged_by(ctx)
    properties = _catalog(ctx, judged_by)
    changed_paths = decode_paths(_flag(ctx, "_changed_paths"))
    run_id = _flag(ctx, "_run_id")
    editable = editable_interpreter_files(ctx)
    if editable:
        fail(("%s: agent_gate's tools would run on a Python toolchain with files in this " +
              "repository (%s), which a patch can edit to forge the verdict. Register a " +
              "toolchain from an external repository, or agent_gate's own " +
              "(agent_gate_dependencies(register_python_toolchain = True)); see docs/offline.md.") %
             (ctx.label, ", ".join(editable[:5])))
    python = python_interpreter(ctx)
    runner = struct(python = python, app = ctx.attr._runner[PythonAppInfo])

    runfiles_files = [judged_by.ledger]

    # A test may read any file at or below a package of its closure, so a change
    # there is never excused as needing no vote. Only paths under `unobserved_ok`
    # need the lookup: any other path outside every strong locality is review anyway.
    excusable = directories_holding(changed_paths, [normalize_prefix(prefix) for prefix in judged_by.unobserved_ok])

    # Where a changed path would be a top-level module: if one of those is on a test's
    # import path (the repository's root always is), the module may shadow another.
    shadowing = module_roots(changed_paths)
    changed_files = normalized_paths(changed_paths)
    catalog = []
    entries = {}  # property id -> its catalog entry
    fixtures = {}
    for _, info in properties:
        for tree in info.fixtures:
            if tree.root not in fixtures:
                fixtures[tree.root] = {
                    "root": tree.root,
                    "seal_file": repo_relative(tree.expected_seal),
                    "expected": rlocation(ctx, tree.expected_seal),
                    "actual": rlocation(ctx, tree.actual_seal),
                    "label": str(tree.label),
                }
                runfiles_files.extend([tree.expected_seal, tree.actual_seal])
        entries[info.id] = {
            "id": info.id,
            "strength": info.strength,
            "locality": info.locality,
            "fixture_roots": [tree.root for tree in info.fixtures],
            "predicate_srcs": info.predicate_srcs,
            "test_packages": info.test_packages,
            "package": info.package,
            "label": str(info.label),
            "test": _test_target(info.test_label),
            "admission_mutants": info.admission_mutants,
            "touched_closure_packages": [p for p in info.closure_packages.to_list() if p in excusable] if excusable else [],
            "touched_import_roots": _touched_import_roots(info.import_roots.to_list(), shadowing, changed_files),
        }
        catalog.append(entries[info.id])

    results = {}
    unsandboxed = {}
    only = _split(_flag(ctx, "_only_properties"))
    for target, info in _matched(properties, changed_paths, full_pass):
        if only and info.id not in only:
            continue

        # A test whose closure would leave the sandbox is never built or run: the
        # gate names its targets (review) rather than run what it cannot sandbox.
        opted_out = info.unsandboxed.to_list()
        if opted_out:
            unsandboxed[info.id] = {"targets": opted_out}
            continue
        shadows = _top_level_modules(info)
        if shadows:
            entries[info.id]["generated_modules"] = shadows
        result, logs = _double_run(ctx, target, info, run_id, runner)
        results[info.id] = {"result": rlocation(ctx, result), "logs": [rlocation(ctx, log) for log in logs]}
        runfiles_files.append(result)
        runfiles_files.extend(logs)

    commit_counts = {}
    for item in _split(_flag(ctx, "_commit_counts")):
        sha, _, count = item.partition("=")
        if not sha or not count.isdigit():
            fail("%s: --@agent_gate//:commit_counts item %r is not `<commit>=<count>` (e.g. 3f2a9c1=4)." % (ctx.label, item))
        commit_counts[sha] = int(count)

    # An agent_gate.GateConfig message, in the proto's JSON form (field names as
    # in proto/agent_gate.proto); agent_gate/formats/gate_config.py reads it, strictly.
    config = ctx.actions.declare_file(ctx.label.name + ".gate.json")
    ctx.actions.write(config, json.encode_indent({
        "mode": "full_strong_pass" if full_pass else "gate",
        "gate_label": str(ctx.label),
        "gate_package": ctx.label.package,
        "catalog": catalog,
        "fixtures": [fixtures[root] for root in sorted(fixtures)],
        "results": results,
        "ledger": {"path": repo_relative(judged_by.ledger), "rlocation": rlocation(ctx, judged_by.ledger)},
        "changed_paths": changed_paths,
        "debt_cap": judged_by.debt_cap,
        "rule_set_paths": judged_by.rule_set_paths,
        "unobserved_ok": judged_by.unobserved_ok,
        "unsandboxed": unsandboxed,
        "changed_paths_sha256": _flag(ctx, "_changed_paths_sha256"),
        "commit_counts": commit_counts,
        "override": {
            "by": _flag(ctx, "_override_by"),
            "ignored_ids": _split(_flag(ctx, "_override_ignore")),
        },
        "run_id": run_id,
    }))
    runfiles_files.append(config)

    evaluator = ctx.attr._evaluator[PythonAppInfo]
    launcher = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.write(launcher, is_executable = True, content = """\
#!/usr/bin/env bash
# agent_gate launcher: evaluates the quorum of {label}.
set -euo pipefail
export RUNFILES_DIR="${{TEST_SRCDIR:-${{RUNFILES_DIR:-$0.runfiles}}}}"
runfiles="$RUNFILES_DIR"
PYTHONPATH="{python_path}" exec "{interpreter}" "$runfiles/{archive}" --config "{config}" "$@"
""".format(
        label = ctx.label,
        python_path = ":".join(["$runfiles/" + root for root in evaluator.site]),
        interpreter = python.runfiles_path,
        archive = rlocation(ctx, evaluator.archive),
        config = rlocation(ctx, config),
    ))
    runfiles = ctx.runfiles(
        files = runfiles_files,
        transitive_files = python.files,
    ).merge(ctx.attr._evaluator[DefaultInfo].default_runfiles)
    return [
        DefaultInfo(executable = launcher, runfiles = runfiles),
        judged_by,
        # The CLI reads the catalog from the config alone: building this group runs
        # no property, whatever the changed paths (agent_gate/cli/catalog.py).
        OutputGroupInfo(agent_gate_config = depset([config])),
    ]

# In a consumer these are --@agent_gate//:NAME. Inside agent_gate's own workspace
# Bazel 4.2.3 knows them only as --//:NAME (`@agent_gate` is not mapped to the
# main repository there); Bazel >= 7 accepts both.
_FLAGS = {
    "_changed_paths": attr.label(default = Label("//:changed_paths")),
    "_changed_paths_sha256": attr.label(default = Label("//:changed_paths_sha256")),
    "_only_properties": attr.label(default = Label("//:only_properties")),
    "_commit_counts": attr.label(default = Label("//:commit_counts")),
    "_override_by": attr.label(default = Label("//:override_by")),
    "_override_ignore": attr.label(default = Label("//:override_ignore")),
    "_run_id": attr.label(default = Label("//:run_id")),
}

# What the gate judges by; a full strong pass takes them from its `gate`.
_CATALOG_ATTRS = {
    "properties": attr.label_list(
        providers = [PropertyInfo],
        doc = "The catalog: `strong_property` and `weak_property` targets.",
    ),
    "ledger": attr.label(
        allow_single_file = True,
        mandatory = True,
        doc = "The freeze ledger, a committed source file: text-format `agent_gate.Ledger` (`ledger.txtpb`) or the JSON rows of docs/article.md.",
    ),
    "debt_cap": attr.int(
        default = 5,
        doc = "Open freezes (plus spent ones) above this stop the whole agent queue.",
    ),
    "rule_set_paths": attr.string_list(
        default = ["MODULE.bazel", "WORKSPACE", "WORKSPACE.bazel", ".bazelrc", ".bazelversion"],
        doc = "Repo-relative prefixes that pin or vendor the gate itself; a diff touching one goes to review.",
    ),
    "unobserved_ok": attr.string_list(
        doc = "Repo-relative prefixes a patch may touch with no strong property observing them " +
              "(e.g. `docs`). Any other touched path outside every strong locality is review: " +
              "no one votes on it. Weak localities never count, and neither does a path at or " +
              "below a package of some property's test closure (a file the test may read), nor a " +
              "BUILD file (an alias there can redirect what a test reads).",
    ),
}

_TOOL_ATTRS = dict({
    # Each is one archive, run with the toolchain's interpreter (rules/private/zipapp.bzl).
    "_runner": attr.label(
        default = Label("//tools:run_property"),
        providers = [PythonAppInfo],
        cfg = "exec",
    ),
    "_evaluator": attr.label(
        default = Label("//tools:evaluate_gate"),
        providers = [PythonAppInfo],
        cfg = "target",
    ),
}, **_FLAGS)

agent_gate_test = rule(
    implementation = _gate_impl,
    doc = "The merge-queue gate: see `agent_gate` in defs.bzl.",
    attrs = dict(_TOOL_ATTRS, _full_pass = attr.bool(default = False), **_CATALOG_ATTRS),
    toolchains = [PYTHON_TOOLCHAIN],
    test = True,
)

full_strong_pass_test = rule(
    implementation = _gate_impl,
    doc = "Every strong property twice, no locality filter: the scheduled full pass.",
    attrs = dict(
        _TOOL_ATTRS,
        _full_pass = attr.bool(default = True),
        gate = attr.label(
            mandatory = True,
            providers = [AgentGateInfo],
            doc = "The `agent_gate` target whose catalog, ledger and debt cap the pass uses.",
        ),
    ),
    toolchains = [PYTHON_TOOLCHAIN],
    test = True,
)
