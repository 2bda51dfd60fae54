"""Analysis tests: PropertyInfo and SealedFixturesInfo, and the actions behind them."""

load("@bazel_skylib//lib:unittest.bzl", "analysistest", "asserts")
load("@rules_python//python:defs.bzl", "py_test")
load("//rules:defs.bzl", "PropertyInfo", "SealedFixturesInfo", "strong_property", "weak_property")
load("//tests/analysis/testdata:exec_group_rule.bzl", "OPT_OUT_KEY")

_FIX = "//tests/analysis/testdata/fix"
_ROOTED = "//tests/analysis/testdata/trees:rooted"

def _short_paths(files):
    return [f.short_path for f in files]

def _property_info_test_impl(ctx):
    env = analysistest.begin(ctx)
    target = analysistest.target_under_test(env)
    info = target[PropertyInfo]

    asserts.equals(env, ctx.attr.expected_id, info.id, "id")
    asserts.equals(env, ctx.attr.expected_strength, info.strength, "strength")
    asserts.equals(env, ctx.attr.expected_locality, info.locality, "locality (normalized)")
    expected_trees = [f[SealedFixturesInfo] for f in ctx.attr.expected_fixtures]
    asserts.equals(
        env,
        [(str(t.label), t.root, t.actual_seal) for t in expected_trees],
        [(str(t.label), t.root, t.actual_seal) for t in info.fixtures],
        "fixtures: the SealedFixturesInfo of each sealed_fixtures target, in order",
    )
    asserts.equals(env, ctx.attr.expected_predicate_srcs, info.predicate_srcs, "predicate_srcs")
    asserts.equals(env, ctx.attr.expected_package, info.package, "package")
    asserts.equals(env, ctx.attr.expected_timeout_seconds, info.timeout_seconds, "timeout_seconds")
    asserts.equals(env, target.label, info.label, "label")
    asserts.equals(env, ctx.workspace_name, info.workspace_name, "workspace_name")

    # The property is itself a test: its executable is a symlink to the wrapped
    # test's executable, and its runfiles carry the predicate and the fixtures.
    executable = target[DefaultInfo].files_to_run.executable
    asserts.equals(env, executable, info.executable, "executable is the target's own executable")
    asserts.equals(env, target.label.name, executable.basename, "executable name")
    wrapped = ctx.attr.expected_test[DefaultInfo].files_to_run.executable
    symlinks = [
        action
        for action in analysistest.target_actions(env)
        if action.mnemonic in ("Symlink", "ExecutableSymlink") and executable in action.outputs.to_list()
    ]
    asserts.equals(env, 1, len(symlinks), "one symlink action creates the executable")
    if len(symlinks) == 1:
        asserts.true(
            env,
            wrapped in symlinks[0].inputs.to_list(),
            "the executable points at the wrapped test's executable %s" % wrapped.short_path,
        )
    runfiles = _short_paths(info.runfiles.files.to_list())
    for tree in info.fixtures:
        for path in tree.rel_paths:
            asserts.true(env, path in runfiles, "fixture %s must be in the runfiles" % path)
    for path in ctx.attr.expected_predicate_srcs:
        asserts.true(env, path in runfiles, "predicate source %s must be in the runfiles" % path)
    return analysistest.end(env)

property_info_test = analysistest.make(
    _property_info_test_impl,
    attrs = {
        "expected_test": attr.label(mandatory = True, doc = "The wrapped test target."),
        "expected_id": attr.string(mandatory = True),
        "expected_strength": attr.string(mandatory = True, values = ["strong", "weak"]),
        "expected_locality": attr.string_list(mandatory = True),
        "expected_fixtures": attr.label_list(
            providers = [SealedFixturesInfo],
            doc = "The sealed_fixtures targets the property must carry, in order.",
        ),
        "expected_predicate_srcs": attr.string_list(mandatory = True),
        "expected_package": attr.string(mandatory = True),
        "expected_timeout_seconds": attr.int(mandatory = True),
    },
)

def _unsandboxed_closure_test_impl(ctx):
    env = analysistest.begin(ctx)
    info = analysistest.target_under_test(env)[PropertyInfo]
    data = "//tests/analysis/testdata"
    expected = [
        "%s (exec_properties[\"%s\"])" % (Label(data + ":exec_group_gen"), OPT_OUT_KEY),
        "%s (exec_properties[\"nosandbox\"])" % Label(data + ":legacy_key_gen"),
        "%s (local = True)" % Label(data + ":local_gen"),
        "%s (local = True)" % Label(data + ":output_local_gen"),
        "%s (tags = [\"no-sandbox\"], tags = [\"requires-network\"])" % Label(data + ":no_sandbox_gen"),
    ]
    asserts.equals(env, sorted(expected), sorted(info.unsandboxed.to_list()), "unsandboxed targets")
    asserts.equals(env, ["tests/analysis/testdata"], info.test_packages, "test_packages")

    # Its own package and the package of a source file it takes; nothing external.
    asserts.equals(
        env,
        ["tests/analysis/testdata", "tests/analysis/testdata/trees"],
        sorted(info.closure_packages.to_list()),
        "closure_packages",
    )
    asserts.equals(
        env,
        ["tests/analysis/testdata", "tests/analysis/testdata/trees"],
        sorted(info.import_roots.to_list()),
        "import_roots: a py_library's `imports`, relative to its package",
    )
    asserts.equals(
        env,
        ["tests/analysis/testdata/generated_mod.py"],
        info.generated_modules.to_list(),
        "generated_modules: the genrule's output a py_library takes",
    )
    return analysistest.end(env)

unsandboxed_closure_test = analysistest.make(_unsandboxed_closure_test_impl)

def _sealed_fixtures_info_test_impl(ctx):
    env = analysistest.begin(ctx)
    target = analysistest.target_under_test(env)
    info = target[SealedFixturesInfo]

    asserts.equals(env, target.label, info.label, "label")
    asserts.equals(env, ctx.attr.expected_root, info.root, "root")
    asserts.equals(env, ctx.attr.expected_rel_paths, info.rel_paths, "rel_paths")
    files = info.files.to_list()
    asserts.equals(env, ctx.attr.expected_rel_paths, _short_paths(files), "files")
    for f in files:
        asserts.true(env, f.is_source, "%s must be a source file" % f.short_path)

    asserts.equals(env, ctx.attr.expected_seal, info.expected_seal.short_path, "expected_seal")
    asserts.true(env, info.expected_seal.is_source, "expected_seal is the committed file")
    asserts.false(env, info.actual_seal.is_source, "actual_seal is built")
    asserts.equals(env, target.label.name + ".actual.seal", info.actual_seal.basename, "actual_seal name")
    asserts.equals(env, [info.actual_seal], target[DefaultInfo].files.to_list(), "DefaultInfo files")

    seals = [a for a in analysistest.target_actions(env) if a.mnemonic == "FixtureSeal"]
    asserts.equals(env, 1, len(seals), "exactly one FixtureSeal action")
    if len(seals) == 1:
        action = seals[0]
        asserts.equals(env, [info.actual_seal], action.outputs.to_list(), "FixtureSeal outputs")
        inputs = action.inputs.to_list()
        for f in files:
            asserts.true(env, f in inputs, "FixtureSeal must read %s" % f.short_path)
        asserts.false(env, info.expected_seal in inputs, "FixtureSeal must not hash the committed seal")
        for f in inputs:
            if f.is_source and f.short_path.startswith(info.root + "/"):
                asserts.false(env, f.extension == "seal", "FixtureSeal must not hash %s" % f.short_path)
        argv = action.argv
        out = argv.index("--out") if "--out" in argv else -1
        asserts.true(env, out >= 0 and out + 1 < len(argv), "FixtureSeal argv has --out: %s" % argv)
        if out >= 0 and out + 1 < len(argv):
            asserts.equals(env, info.actual_seal.path, argv[out + 1], "--out is the actual seal")
    return analysistest.end(env)

sealed_fixtures_info_test = analysistest.make(
    _sealed_fixtures_info_test_impl,
    attrs = {
        "expected_root": attr.string(mandatory = True),
        "expected_rel_paths": attr.string_list(mandatory = True),
        "expected_seal": attr.string(mandatory = True, doc = "short_path of the committed seal."),
    },
)

def _how_read_test_impl(ctx):
    # The facts were gathered while the package loaded; a mismatch fails the test run.
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    if ctx.attr.actual == ctx.attr.expected:
        content = "#!/bin/sh\nexit 0\n"
    else:
        content = "#!/bin/sh\necho 'expected %s' >&2\necho 'got      %s' >&2\nexit 1\n" % (
            ctx.attr.expected,
            ctx.attr.actual,
        )
    ctx.actions.write(script, content, is_executable = True)
    return [DefaultInfo(executable = script)]

how_read_test = rule(
    implementation = _how_read_test_impl,
    doc = "Checks how each property's macro chose to read its test (declaration or aspect).",
    attrs = {
        "actual": attr.string_list(mandatory = True),
        "expected": attr.string_list(mandatory = True),
    },
    test = True,
)

def _how_read(name):
    """How the macro of property `name` (declared above) reads its test's srcs."""
    declared = native.existing_rule(name)
    if declared.get("predicate_test"):
        return "%s: aspect" % name
    return "%s: declaration, %d srcs" % (name, len(declared.get("predicate_srcs", [])))

def _timeout_test_impl(ctx):
    env = analysistest.begin(ctx)
    target = analysistest.target_under_test(env)
    asserts.equals(env, ctx.attr.expected, target[PropertyInfo].timeout_seconds, "timeout_seconds")
    asserts.true(env, "manual" in ctx.attr.expected_tags_of, "properties are tagged manual")
    return analysistest.end(env)

timeout_test = analysistest.make(
    _timeout_test_impl,
    attrs = {
        "expected": attr.int(mandatory = True),
        "expected_tags_of": attr.string_list(doc = "The property's declared tags."),
    },
)

def _timeout_cases():
    """The wrapped test's size or timeout sets the per-run timeout, unless the property sets one."""
    py_test(name = "here_small_test", srcs = ["here/main.py"], main = "here/main.py", size = "small", tags = ["manual"])
    py_test(name = "here_long_test", srcs = ["here/main.py"], main = "here/main.py", timeout = "long", tags = ["manual"])
    strong_property(name = "here_small", test = ":here_small_test", locality = ["tests/analysis/here"])
    strong_property(name = "here_long", test = ":here_long_test", locality = ["tests/analysis/here"])
    strong_property(name = "here_long_own", test = ":here_long_test", locality = ["tests/analysis/here"], timeout_seconds = 42)
    tests = []
    for subject, expected in [("here_small", 60), ("here_long", 900), ("here_long_own", 42)]:
        timeout_test(
            name = subject + "_timeout_test",
            target_under_test = ":" + subject,
            expected = expected,
            expected_tags_of = native.existing_rule(subject)["tags"],
        )
        tests.append(":%s_timeout_test" % subject)
    return tests

def _same_package_cases():
    """Properties of a test in this package: read from its declaration when it comes first."""
    srcs = ["tests/analysis/here/main.py", "tests/analysis/here/helper.py"]
    tests = []

    # Before its test: the macro cannot see it yet, so the aspect reads it.
    strong_property(name = "here_declared_later", test = ":here_test", locality = ["tests/analysis/here"], tags = ["manual"])
    native.filegroup(name = "here_helpers", srcs = ["here/helper.py"], tags = ["manual"])
    native.genrule(name = "here_generated", outs = ["here/generated.py"], cmd = "touch $@", tags = ["manual"])
    py_test(
        name = "here_test",
        srcs = ["here/main.py", ":here_helpers", ":here_generated"],
        main = "here/main.py",
        tags = ["manual"],
    )
    strong_property(name = "here_declared_earlier", test = ":here_test", locality = ["tests/analysis/here"], tags = ["manual"])
    weak_property(name = "here_by_full_label", test = "//tests/analysis:here_test", locality = ["tests/analysis/here"], tags = ["manual"])
    strong_property(name = "here_bare_name", test = "here_test", locality = ["tests/analysis/here"], tags = ["manual"])

    # An alias declares no srcs of its own: the aspect sees through it to the test.
    native.alias(name = "here_alias_test", actual = "//tests/analysis/testdata:predicate_test", tags = ["manual"])
    strong_property(name = "here_through_alias", test = ":here_alias_test", locality = ["tests/analysis/here"], tags = ["manual"])

    how_read_test(
        name = "here_how_read_test",
        actual = [_how_read(n) for n in [
            "here_declared_later",
            "here_declared_earlier",
            "here_by_full_label",
            "here_bare_name",
            "here_through_alias",
        ]],
        expected = [
            "here_declared_later: aspect",
            "here_declared_earlier: declaration, 3 srcs",
            "here_by_full_label: declaration, 3 srcs",
            "here_bare_name: declaration, 3 srcs",
            "here_through_alias: aspect",
        ],
    )
    tests.append(":here_how_read_test")

    # Either way, the same predicate sources: a filegroup's files, no generated file;
    # through the alias, the aliased test's own.
    aliased_srcs = [
        "tests/analysis/testdata/helper.py",
        "tests/analysis/testdata/predicate_main.py",
    ]
    for subject, strength, wrapped, expected_srcs in [
        ("here_declared_later", "strong", ":here_test", srcs),
        ("here_declared_earlier", "strong", ":here_test", srcs),
        ("here_by_full_label", "weak", ":here_test", srcs),
        ("here_bare_name", "strong", ":here_test", srcs),
        ("here_through_alias", "strong", "//tests/analysis/testdata:predicate_test", aliased_srcs),
    ]:
        property_info_test(
            name = subject + "_info_test",
            target_under_test = ":" + subject,
            expected_test = wrapped,
            expected_id = subject,
            expected_strength = strength,
            expected_locality = ["tests/analysis/here"],
            expected_fixtures = [],
            expected_predicate_srcs = expected_srcs,
            expected_package = "tests/analysis",
            expected_timeout_seconds = 300,
        )
        tests.append(":%s_info_test" % subject)
    return tests

def _invocation_test_impl(ctx):
    env = analysistest.begin(ctx)
    info = analysistest.target_under_test(env)[PropertyInfo]
    generated = [f for f in ctx.files.generated if f.basename == "generated_data.txt"][0]
    expected_args = [
        "--mode=strict",
        "--data=tests/analysis/testdata/helper.py",
        # `location` is the runfiles path for a test, as `bazel test` expands it.
        "--gen=tests/analysis/testdata/generated_data.txt",
        "two words",
        "a\\b",
        "",
        "--exec=" + generated.path,
        "--mode=" + ctx.var["COMPILATION_MODE"],
        "$HOME",
    ]
    asserts.equals(env, expected_args, info.test_args, "test_args: expanded, then split into words")
    asserts.equals(
        env,
        {"DATA": "tests/analysis/testdata/helper.py", "MODE": "strict 'kept'", "TZ": "Europe/Paris"},
        info.test_env,
        "test_env: expanded, never split",
    )
    asserts.equals(env, ctx.attr.expected_timeout_seconds, info.timeout_seconds, "timeout_seconds from the test's size")
    return analysistest.end(env)

invocation_test = analysistest.make(
    _invocation_test_impl,
    attrs = {
        "generated": attr.label(allow_files = True),
        "expected_timeout_seconds": attr.int(mandatory = True),
    },
)

def _invocation_cases():
    """A wrapped test's `args` and `env` reach PropertyInfo as `bazel test` would pass them."""
    strong_property(
        name = "with_args",
        test = "//tests/analysis/testdata:with_args_test",
        locality = ["tests/analysis/testdata"],
        tags = ["manual"],
    )
    weak_property(
        name = "with_args_own_timeout",
        test = "//tests/analysis/testdata:with_args_test",
        locality = ["tests/analysis/testdata"],
        timeout_seconds = 5,
        tags = ["manual"],
    )
    tests = []
    for subject, seconds in [("with_args", 60), ("with_args_own_timeout", 5)]:
        invocation_test(
            name = subject + "_invocation_test",
            target_under_test = ":" + subject,
            generated = "//tests/analysis/testdata:generated_data",
            expected_timeout_seconds = seconds,
        )
        tests.append(":%s_invocation_test" % subject)
    return tests

def provider_test_suite(name):
    """Declares the provider subjects and tests of this file, and a test_suite `name`.

    Args:
      name: name of the test_suite grouping the tests.
    """
    strong_property(
        name = "info_strong",
        test = "//tests/analysis/testdata:pass_test",
        locality = [
            "tests/analysis/x/api/",
            "tests/analysis/shared",
        ],
        fixtures = [
            _FIX,
            _ROOTED,
        ],
        timeout_seconds = 42,
        tags = ["manual"],
    )
    property_info_test(
        name = "strong_property_info_test",
        target_under_test = ":info_strong",
        expected_test = "//tests/analysis/testdata:pass_test",
        expected_id = "info_strong",
        expected_strength = "strong",
        expected_locality = [
            "tests/analysis/x/api",
            "tests/analysis/shared",
        ],
        expected_fixtures = [
            _FIX,
            _ROOTED,
        ],
        expected_predicate_srcs = ["tests/analysis/testdata/pass.sh"],
        expected_package = "tests/analysis",
        expected_timeout_seconds = 42,
    )

    weak_property(
        name = "info_weak",
        id = "info.weak_custom_id",
        test = "//tests/analysis/testdata:predicate_test",
        locality = ["tests/analysis/x"],
        tags = ["manual"],
    )
    property_info_test(
        name = "weak_property_info_test",
        target_under_test = ":info_weak",
        expected_test = "//tests/analysis/testdata:predicate_test",
        expected_id = "info.weak_custom_id",
        expected_strength = "weak",
        expected_locality = ["tests/analysis/x"],
        expected_fixtures = [],
        expected_predicate_srcs = [
            "tests/analysis/testdata/helper.py",
            "tests/analysis/testdata/predicate_main.py",
        ],
        expected_package = "tests/analysis",
        expected_timeout_seconds = 300,
    )

    sealed_fixtures_info_test(
        name = "sealed_fixtures_default_root_test",
        target_under_test = _FIX,
        expected_root = "tests/analysis/testdata/fix",
        expected_rel_paths = [
            "tests/analysis/testdata/fix/BUILD.bazel",
            "tests/analysis/testdata/fix/a.txt",
            "tests/analysis/testdata/fix/sub/b.json",
        ],
        expected_seal = "tests/analysis/testdata/fix/fix.seal",
    )
    sealed_fixtures_info_test(
        name = "sealed_fixtures_explicit_root_test",
        target_under_test = _ROOTED,
        expected_root = "tests/analysis/testdata/trees/inside",
        expected_rel_paths = [
            "tests/analysis/testdata/trees/inside/deep/y.txt",
            "tests/analysis/testdata/trees/inside/seal.txt",
            "tests/analysis/testdata/trees/inside/x.txt",
        ],
        expected_seal = "tests/analysis/testdata/trees/rooted.seal",
    )

    strong_property(
        name = "unsandboxed_closure_property",
        test = "//tests/analysis/testdata:unsandboxed_closure_test",
        locality = ["tests/analysis/testdata"],
        tags = ["manual"],
    )
    unsandboxed_closure_test(
        name = "unsandboxed_closure_property_test",
        target_under_test = ":unsandboxed_closure_property",
    )

    native.test_suite(
        name = name,
        tests = [
            ":unsandboxed_closure_property_test",
            ":strong_property_info_test",
            ":weak_property_info_test",
            ":sealed_fixtures_default_root_test",
            ":sealed_fixtures_explicit_root_test",
        ] + _same_package_cases() + _timeout_cases() + _invocation_cases(),
    )
