"""`strong_property` / `weak_property`: a test target wrapped as a catalog row."""

load("//rules:providers.bzl", "PropertyInfo", "SealedFixturesInfo")
load(":paths.bzl", "normalize_prefix", "prefix_error", "repo_relative")
load(":test_invocation.bzl", "invocation")

PredicateSourcesInfo = provider(
    doc = "What a property needs to know of the test it wraps.",
    fields = {
        "paths": "list of repo-relative `srcs`: the predicate a property runs.",
        "package": "repo-relative package of the BUILD file declaring the test (through an alias).",
        "args": "the test's `args`, expanded and split into words as `bazel test` passes them.",
        "env": "the test's `env`, expanded as `bazel test` sets it.",
        "refusals": "what of the test's `args`, `env` and `env_inherit` a property cannot reproduce.",
        "timeout_seconds": "the per-run timeout Bazel gives the test (its `timeout`, else its `size`).",
    },
)

TestClosureInfo = provider(
    doc = "What the gate must know of a wrapped test's closure in the main repository.",
    fields = {
        "unsandboxed": "depset of `<label> (<why>)`: targets whose actions would opt out of " +
                       "the sandbox or its network block.",
        "packages": "depset of the repo-relative packages of its targets and of the source " +
                    "files they take: a patch to a file at or below one can change what the test reads.",
        "import_roots": "depset of the repo-relative directories its targets' `imports` put " +
                        "on Python's import path: a module there can shadow one the test imports.",
        "generated_modules": "depset of the repo-relative paths of generated Python modules " +
                             "(`.py`, `.pyc`, `.so`) its targets take: one at an import root can " +
                             "shadow what the test imports with no touched path named like it.",
    },
)

# Execution requirements (set through `tags`) that take an action out of the
# linux-sandbox, give it the network, or hand it to a persistent worker.
_OPT_OUT_TAGS = [
    "local",
    "no-sandbox",
    # The legacy spelling: Bazel 7 still honours it as an `exec_properties` key.
    "nosandbox",
    "no-remote",
    "no-remote-exec",
    "requires-network",
    "supports-workers",
    "supports-multiplex-workers",
]

def _opt_outs(rule_attr):
    """Why a target's own attributes would run its actions unsandboxed (empty: they would not)."""
    why = []
    for tag in getattr(rule_attr, "tags", []) or []:
        if tag in _OPT_OUT_TAGS or tag.startswith("requires-"):
            why.append("tags = [\"%s\"]" % tag)
    if getattr(rule_attr, "local", False) == True:
        why.append("local = True")
    exec_properties = getattr(rule_attr, "exec_properties", {}) or {}
    for key in exec_properties:
        # `<exec group>.<key>` sets the key for one exec group's actions.
        name = key.rpartition(".")[2]
        if name in _OPT_OUT_TAGS or name.startswith("requires-"):
            why.append("exec_properties[\"%s\"]" % key)
    return why

# What Python imports as a module; a build that generates one at an import root
# (a genrule whose output is `unittest.py`) shadows what a test imports.
_MODULE_SUFFIXES = (".py", ".pyc", ".so")

def _targets(value):
    """The Targets among one attribute's value: a label, a label list or a label-keyed dict."""
    kind = type(value)
    if kind == "Target":
        return [value]

    # An attribute's list holds one type: a label list's first item says it is one.
    if kind == "list":
        return value if value and type(value[0]) == "Target" else []
    if kind == "dict":
        # A label_keyed_string_dict (rules_pkg's `files`) or a string_keyed_label_dict.
        return [item for item in list(value.keys()) + list(value.values()) if type(item) == "Target"]
    return []

def _generated_modules(files):
    """The repo-relative paths of the main repository's generated Python modules among `files`."""
    return [
        file.short_path
        for file in files
        if not file.is_source and not file.owner.workspace_root and file.basename.endswith(_MODULE_SUFFIXES)
    ]

def _walk(target, rule_attr):
    """One pass over a rule's attributes: what its targets below and its own files add.

    Returns:
      struct(below: the TestClosureInfo of the rule targets it takes, packages: the
      main repository's packages of every target it takes (a source file's is the
      package that owns it), modules: generated modules it takes or makes).
    """
    below = []
    packages = {}
    modules = []
    for name in dir(rule_attr):
        value = getattr(rule_attr, name)

        # Most attributes are unset or empty (None, False, "", []): no call, no type().
        if not value:
            continue
        for item in _targets(value):
            if TestClosureInfo in item:
                below.append(item[TestClosureInfo])
            if item.label.workspace_root:
                continue
            packages[item.label.package] = True

            # A generated file named as an output (`:unittest.py`) may be an implicit
            # output, which its rule's own `files` do not list.
            if item.label.name.endswith(_MODULE_SUFFIXES):
                modules.extend(_generated_modules(item.files.to_list()))
    if not target.label.workspace_root:
        # What the rule makes and hands on (a genrule's `outs`), wherever a consumer names it.
        modules.extend(_generated_modules(target.files.to_list()))
    return struct(below = below, packages = packages.keys(), modules = modules)

def _import_roots(package, imports):
    """The repo-relative directories a target's `imports` name (relative to its package)."""
    roots = []
    for entry in imports:
        if type(entry) != "string" or entry.startswith("/"):
            continue
        parts = package.split("/") if package else []
        for part in entry.split("/"):
            if part == "..":
                parts = parts[:-1]
            elif part and part != ".":
                parts.append(part)
        roots.append("/".join(parts))
    return roots

# The repositories Bazel itself generates, by their WORKSPACE names. A prefix would
# not do: a base's `local_repository(name = "local_config_vendored")` is the patch's
# to edit.
_BAZELS_OWN_REPOSITORIES = [
    "bazel_tools",
    "local_config_apple_cc",
    "local_config_apple_cc_toolchains",
    "local_config_cc",
    "local_config_cc_toolchains",
    "local_config_platform",
    "local_config_sh",
    "local_config_xcode",
]

def _bazels_own_repository(label):
    """Whether the label is in a repository Bazel itself provides or generates.

    Every other repository may be a patch's to edit: a `local_repository` or a
    `new_local_repository` of the base can point into the patched tree, and the
    rule set cannot tell it from a pinned download.
    """
    name = label.workspace_name
    if name in _BAZELS_OWN_REPOSITORIES:
        return True

    # Under bzlmod an extension's repository is `<module>~<extension>~<name>` (or
    # `+`): Bazel's own are bazel_tools' extensions'. No other module can take that prefix.
    parts = name.replace("+", "~").split("~")
    return len(parts) > 1 and parts[0] == "bazel_tools" and parts[-1] in _BAZELS_OWN_REPOSITORIES

# Most targets add nothing to most fields: they share one empty depset, and a target
# with one contributor below hands its depset on, so the walk allocates little.
_EMPTY = depset()

def _merged(own, transitive):
    """depset(own, transitive = transitive), reusing what it can."""
    transitive = [d for d in transitive if d]
    if own:
        return depset(own, transitive = transitive)
    if not transitive:
        return _EMPTY
    if len(transitive) == 1:
        return transitive[0]
    return depset(transitive = transitive)

def _test_closure_aspect_impl(target, ctx):
    own = []
    if not _bazels_own_repository(target.label):
        why = _opt_outs(ctx.rule.attr)
        if why:
            own.append("%s (%s)" % (target.label, ", ".join(why)))
    walked = _walk(target, ctx.rule.attr)

    # Packages and import roots: the main repository's, which a patch names by path.
    packages = walked.packages
    import_roots = []
    if not target.label.workspace_root:
        packages = [target.label.package] + packages
        import_roots = _import_roots(target.label.package, getattr(ctx.rule.attr, "imports", None) or [])
    below = walked.below
    return [TestClosureInfo(
        unsandboxed = _merged(own, [info.unsandboxed for info in below]),
        packages = _merged(packages, [info.packages for info in below]),
        import_roots = _merged(import_roots, [info.import_roots for info in below]),
        generated_modules = _merged(walked.modules, [info.generated_modules for info in below]),
    )]

test_closure_aspect = aspect(
    implementation = _test_closure_aspect_impl,
    attr_aspects = ["*"],
    # A dependency named by an output file (`data = [":pwn.txt"]`) is its generating
    # rule: without this the walk stops at the file and never sees a `local = 1` genrule.
    apply_to_generating_rules = True,
    doc = "Walks a wrapped test's closure: the targets that would run unsandboxed, so the " +
          "gate can refuse (review) what it cannot force into the sandbox, and the packages " +
          "whose files the test reads, so `unobserved_ok` never excuses a patch to them, and " +
          "the directories its Python `imports` name, where a module may shadow another.",
)

# Bazel's test timeouts in seconds, by `timeout` and by the `size` that implies one.
TIMEOUT_SECONDS = {"short": 60, "moderate": 300, "long": 900, "eternal": 3600}
SIZE_TIMEOUT = {"small": "short", "medium": "moderate", "large": "long", "enormous": "eternal"}

def test_timeout_seconds(timeout, size):
    """The per-run timeout Bazel gives a test of this `timeout` and `size`, or None.

    Args:
      timeout: the test's `timeout` attribute (`short` ... `eternal`), or None.
      size: the test's `size` attribute (`small` ... `enormous`), or None (medium).

    Returns:
      Seconds, or None for a value Bazel does not know.
    """
    return TIMEOUT_SECONDS.get(timeout or SIZE_TIMEOUT.get(size or "medium", ""))

def _location_targets(rule_attr):
    """The test's dependencies a `$(location)` in its `args` or `env` may name."""
    targets = []
    for name in ("srcs", "deps", "data"):
        value = getattr(rule_attr, name, None) or []
        values = value if type(value) == "list" else [value]
        targets.extend([item for item in values if type(item) == "Target"])
    return targets

def _predicate_sources_aspect_impl(target, ctx):
    paths = []
    if hasattr(ctx.rule.attr, "srcs"):
        for src in ctx.rule.files.srcs:
            if src.is_source:
                paths.append(repo_relative(src))
    invoked = invocation(
        args = getattr(ctx.rule.attr, "args", None) or [],
        env = getattr(ctx.rule.attr, "env", None) or {},
        env_inherit = getattr(ctx.rule.attr, "env_inherit", None) or [],
        # In an aspect, labels resolve against the test's own package, as Bazel does.
        locator = struct(expand_location = ctx.expand_location, targets = _location_targets(ctx.rule.attr)),
        variables = ctx.var,
    )
    return [PredicateSourcesInfo(
        paths = paths,
        package = target.label.package,
        args = invoked.args,
        env = invoked.env,
        refusals = invoked.refusals,
        timeout_seconds = test_timeout_seconds(
            getattr(ctx.rule.attr, "timeout", None),
            getattr(ctx.rule.attr, "size", None),
        ),
    )]

# Bazel 4.2.3 charges about 0.1 ms of analysis per aspect application whatever it
# does, more than the rest of a property; so the macro reads the test's declaration
# when it can (`_predicate_attributes` in macros.bzl) and the aspect is the fallback.
predicate_sources_aspect = aspect(
    implementation = _predicate_sources_aspect_impl,
    doc = "Collects the wrapped test's `srcs` (a diff that edits them goes to review), and " +
          "its `args`, `env` and timeout, which the double run reproduces.",
)

def _predicate(ctx):
    """What the property takes from the wrapped test: struct(paths, packages, args, env, refusals, timeout_seconds)."""
    packages = [ctx.attr.test.label.package]
    if ctx.attr.predicate_test:
        if ctx.attr.predicate_test.label != ctx.attr.test.label:
            fail("%s: predicate_test %s must be the wrapped test %s (set only by the macro)." %
                 (ctx.label, ctx.attr.predicate_test.label, ctx.attr.test.label))
        info = ctx.attr.predicate_test[PredicateSourcesInfo]
        if info.package not in packages:
            packages.append(info.package)
        return struct(
            paths = info.paths,
            packages = packages,
            args = info.args,
            env = info.env,
            refusals = info.refusals,
            timeout_seconds = info.timeout_seconds,
        )

    # The macro read the declaration: it has neither `args`, `env` nor `env_inherit`.
    return struct(
        paths = [repo_relative(src) for src in ctx.files.predicate_srcs if src.is_source],
        packages = packages,
        args = [],
        env = {},
        refusals = [],
        timeout_seconds = None,
    )

# What Bazel gives a test of the default size, `medium`.
_DEFAULT_TIMEOUT_SECONDS = 300

def _validate(ctx, strength):
    if not ctx.attr.locality:
        fail(("%s: a %s property needs a non-empty `locality`: the repo-relative path " +
              "prefixes it observes, e.g. locality = [\"api/handlers\"].") % (ctx.label, strength))
    for prefix in ctx.attr.locality:
        problem = prefix_error(prefix)
        if problem:
            fail("%s: locality entry %r is %s." % (ctx.label, prefix, problem))
    property_id = ctx.attr.id or ctx.label.name

    # Ids name output files and flags: letters, digits, '.', '_' and '-' only.
    if property_id in (".", "..") or [c for c in property_id.elems() if not (c.isalnum() or c in "._-")]:
        fail("%s: id %r may only use letters, digits, '.', '_' and '-' (e.g. \"counter.monotonic_under_replay\")." % (ctx.label, property_id))
    if ctx.attr.timeout_seconds < 0 or (ctx.attr.timeout_seconds == 0 and ctx.attr.timeout_set):
        fail("%s: timeout_seconds must be positive, got %d." % (ctx.label, ctx.attr.timeout_seconds))
    return property_id

def _property_impl(ctx, strength, admission_mutants = []):
    property_id = _validate(ctx, strength)
    predicate = _predicate(ctx)
    if predicate.refusals:
        fail(("%s: the double run cannot invoke the wrapped test %s as `bazel test` does: %s. " +
              "Move what it needs into the test itself.") %
             (ctx.label, ctx.attr.test.label, "; ".join(predicate.refusals)))
    timeout_seconds = ctx.attr.timeout_seconds or predicate.timeout_seconds or _DEFAULT_TIMEOUT_SECONDS
    test_executable = ctx.executable.test
    executable = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = executable, target_file = test_executable, is_executable = True)

    fixtures = [f[SealedFixturesInfo] for f in ctx.attr.fixtures]
    fixture_files = [info.files for info in fixtures]
    runfiles = ctx.runfiles(
        files = [executable, test_executable],
        transitive_files = depset(transitive = fixture_files),
    ).merge(ctx.attr.test[DefaultInfo].default_runfiles)

    return [
        DefaultInfo(executable = executable, runfiles = runfiles),
        PropertyInfo(
            id = property_id,
            strength = strength,
            locality = [normalize_prefix(p) for p in ctx.attr.locality],
            fixtures = fixtures,
            executable = executable,
            runfiles = runfiles,
            label = ctx.label,
            test_label = ctx.attr.test.label,
            predicate_srcs = predicate.paths,
            test_packages = predicate.packages,
            package = ctx.label.package,
            timeout_seconds = timeout_seconds,
            test_args = predicate.args,
            test_env = predicate.env,
            workspace_name = ctx.workspace_name,
            admission_mutants = [repo_relative(f) for f in admission_mutants],
            unsandboxed = ctx.attr.test[TestClosureInfo].unsandboxed,
            closure_packages = ctx.attr.test[TestClosureInfo].packages,
            import_roots = ctx.attr.test[TestClosureInfo].import_roots,
            generated_modules = ctx.attr.test[TestClosureInfo].generated_modules,
        ),
        # `bazel test` on the property itself sets the wrapped test's `env` too.
        testing.TestEnvironment(predicate.env),
    ]

def _strong_property_impl(ctx):
    return _property_impl(ctx, "strong", ctx.files.admission_mutants)

def _weak_property_impl(ctx):
    return _property_impl(ctx, "weak")

_ATTRS = {
    "test": attr.label(
        mandatory = True,
        executable = True,
        cfg = "target",
        aspects = [test_closure_aspect],
        doc = "The test target that is the predicate (`py_test`, `sh_test`, `go_test`, ...).",
    ),
    # The wrapped test's `srcs`, which the macro reads from its declaration when it
    # sets no `args`, `env` or `env_inherit`; otherwise `predicate_test` for the aspect.
    "predicate_srcs": attr.label_list(
        allow_files = True,
        doc = "Set by the macro: the wrapped test's `srcs`, as declared earlier in this package.",
    ),
    "predicate_test": attr.label(
        aspects = [predicate_sources_aspect],
        doc = "Set by the macro when the test is declared elsewhere or with `select()`: " +
              "the wrapped test again, for the aspect that reads its `srcs`, `args` and `env`.",
    ),
    "locality": attr.string_list(
        doc = "Repo-relative path prefixes the property observes, matched per path component: " +
              "`api/handlers` covers `api/handlers/x.py`, not `api/handlers_v2/x.py`.",
    ),
    "fixtures": attr.label_list(
        providers = [SealedFixturesInfo],
        doc = "`sealed_fixtures` targets the property reads.",
    ),
    "id": attr.string(doc = "Catalog id; default: the target name."),
    "timeout_seconds": attr.int(
        doc = "Per-run timeout of the gate's double run; a run past it is killed and counts as a " +
              "timeout. 0: the wrapped test's own (its `timeout`, else its `size`), else 300.",
    ),
    "timeout_set": attr.bool(doc = "Set by the macro: the BUILD file gave `timeout_seconds`."),
}

strong_property_test = rule(
    implementation = _strong_property_impl,
    doc = """A strong property: an invariant the patch can break. It votes.

The target is itself a test: `bazel test` on it runs the wrapped test.""",
    attrs = dict(_ATTRS, admission_mutants = attr.label_list(
        allow_files = [".patch", ".diff"],
        doc = "Patches that each delete the property's invariant and change nothing else: " +
              "`agent-gate admit --all-declared` checks the property passes twice without " +
              "them and fails twice with each one.",
    )),
    test = True,
)

weak_property_test = rule(
    implementation = _weak_property_impl,
    doc = """A weak property: a shape check. It can reject a patch, never fill a strong gap.""",
    attrs = _ATTRS,
    test = True,
)
