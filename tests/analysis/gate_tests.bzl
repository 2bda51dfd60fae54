"""Analysis tests: the PropertyDoubleRun actions of `agent_gate` and `full_strong_pass`.

The catalog under test (all in this package, all `manual`):

| target                | strength | locality               |
| --------------------- | -------- | ---------------------- |
| `gate_api_strong`     | strong   | `tests/analysis/x/api` |
| `gate_y_strong`       | strong   | `tests/analysis/y`     |
| `gate_x_weak`         | weak     | `tests/analysis/x`     |
| `gate_z_weak`         | weak     | `tests/analysis/z`     |

Build settings are set with analysistest's `config_settings` (a transition on
the target under test), so each scenario is its own test rule. The labels are
spelled `str(Label("//:changed_paths"))`: on Bazel 4.2.3 a transition in
@bazel_skylib resolves `//:x` against the main repository, which is agent_gate
here, while `@agent_gate//:x` names a second copy of the root package whose
setting the rules never read.
"""

load("@bazel_skylib//lib:unittest.bzl", "analysistest", "asserts")
load("//rules:defs.bzl", "SealedFixturesInfo", "agent_gate", "full_strong_pass", "strong_property", "weak_property")

_CHANGED_PATHS = str(Label("//:changed_paths"))
_RUN_ID = str(Label("//:run_id"))

_CATALOG = [
    ":gate_api_strong",
    ":gate_y_strong",
    ":gate_x_weak",
    ":gate_z_weak",
]

# Touches every property's locality, each one by two paths.
_ALL_PATHS = ",".join([
    "tests/analysis/x/api/a.py",
    "tests/analysis/x/api/b.py",
    "tests/analysis/y/c.py",
    "tests/analysis/y/deep/d.py",
    "tests/analysis/z/e.txt",
    "tests/analysis/z/f.txt",
])

_SANDBOX_REQUIREMENTS = {
    "block-network": "1",
    "no-cache": "1",
    "no-remote-cache": "1",
}

def _argv_value(argv, flag):
    """The value of `flag` in `argv` (`FLAG VALUE` or `FLAG=VALUE`), or None."""
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
    return None

def _double_runs(actions):
    return [action for action in actions if action.mnemonic == "PropertyDoubleRun"]

# --- which properties get a double run ---------------------------------------

def _double_run_ids_test_impl(ctx):
    env = analysistest.begin(ctx)
    gate = analysistest.target_under_test(env)
    runs = _double_runs(analysistest.target_actions(env))
    ids = [_argv_value(action.argv, "--property_id") for action in runs]
    asserts.equals(
        env,
        sorted(ctx.attr.expected_ids),
        sorted(ids),
        "exactly one PropertyDoubleRun per matched property, none for the others",
    )
    for action in runs:
        property_id = _argv_value(action.argv, "--property_id")

        # TEST_TARGET as Bazel sets it for a test of the main repository: `//pkg:name`.
        expected_label = "//%s:%s" % (gate.label.package, property_id)

        # One argument: a bzlmod label (`@@//...`) alone would read as a params file.
        asserts.true(
            env,
            "--label=" + expected_label in action.argv,
            "--label=%s is one argument of %s" % (expected_label, property_id),
        )
        outputs = [f.short_path for f in action.outputs.to_list()]
        prefix = "%s/%s.runs/%s" % (gate.label.package, gate.label.name, property_id)
        asserts.equals(
            env,
            sorted([prefix + ".result.txtpb", prefix + ".run1.log", prefix + ".run2.log"]),
            sorted(outputs),
            "outputs of the double run of %s: its result and two logs" % property_id,
        )
    return analysistest.end(env)

_IDS_ATTRS = {
    "expected_ids": attr.string_list(doc = "Ids of the properties that must get one double run each."),
}

def _ids_test(changed_paths, only = None):
    settings = {_CHANGED_PATHS: changed_paths}
    if only != None:
        settings[str(Label("//:only_properties"))] = only
    return analysistest.make(
        _double_run_ids_test_impl,
        attrs = _IDS_ATTRS,
        config_settings = settings,
    )

# A diff inside x/api: the strong api property and the weak x property.
gate_matches_locality_test = _ids_test("tests/analysis/x/api/handler.py,tests/analysis/x/api/serializer.py")

# x/api_v2 is not under x/api (per path component), but it is under x.
gate_matches_per_component_test = _ids_test("tests/analysis/x/api_v2/f.py")

# yy is not y; docs/ is no property's.
gate_matches_nothing_test = _ids_test("tests/analysis/yy/f.py,docs/readme.md,tests/analysis")

# `only_properties`: of everything the paths match, just the one named runs.
gate_runs_only_the_named_property_test = _ids_test(_ALL_PATHS, only = "gate_y_strong")

# A matched property whose test's closure would leave the sandbox is never built.
gate_skips_unsandboxed_closure_test = _ids_test("tests/analysis/testdata/x.py")

# No diff at all: nothing runs (the decision is review).
gate_no_changed_paths_test = _ids_test("")

# Every locality touched, each by two paths: still one double run per property.
gate_matches_all_test = _ids_test(_ALL_PATHS)

# The full strong pass ignores locality: every strong property, no weak one,
# even with a diff that touches only a weak property's locality.
full_strong_pass_runs_every_strong_test = _ids_test("tests/analysis/z/e.txt")

# --- how a double run is executed ---------------------------------------------

def _double_run_sandbox_test_impl(ctx):
    env = analysistest.begin(ctx)
    runs = _double_runs(analysistest.target_actions(env))
    asserts.equals(env, 4, len(runs), "every property of the catalog is matched")

    # Action.execution_info is gated behind --experimental_google_legacy_api
    # (Bazel 4.2.3 hides it without that flag). Where it is hidden, nothing in
    # Starlark can see an action's execution requirements: say so in the log.
    unchecked = []
    for action in runs:
        property_id = _argv_value(action.argv, "--property_id")
        if not hasattr(action, "execution_info"):
            unchecked.append(property_id)
            continue
        for key, value in _SANDBOX_REQUIREMENTS.items():
            asserts.equals(
                env,
                value,
                action.execution_info.get(key),
                "execution requirement %s of the double run of %s" % (key, property_id),
            )
    if unchecked:
        # buildifier: disable=print
        print(("%s: execution requirements of %s not checked: Action.execution_info needs " +
               "--experimental_google_legacy_api on this Bazel") % (ctx.label, ", ".join(unchecked)))
    return analysistest.end(env)

gate_double_run_sandbox_test = analysistest.make(
    _double_run_sandbox_test_impl,
    config_settings = {_CHANGED_PATHS: _ALL_PATHS},
)

def _double_run_inputs_test_impl(ctx):
    env = analysistest.begin(ctx)
    runs = _double_runs(analysistest.target_actions(env))
    by_id = {_argv_value(action.argv, "--property_id"): action for action in runs}
    asserts.equals(env, ["gate_api_strong", "gate_x_weak"], sorted(by_id.keys()), "matched properties")
    action = by_id.get("gate_api_strong")
    if action:
        # The gate is analyzed under the test's transition and these attributes
        # are not, so generated files are compared by short_path.
        prop = ctx.attr.property[DefaultInfo].files_to_run.executable.short_path
        inputs = [f.short_path for f in action.inputs.to_list()]
        asserts.true(env, prop in inputs, "the property's executable %s is a tool of its double run" % prop)
        executable = _argv_value(action.argv, "--executable") or ""
        asserts.true(env, executable.endswith("/bin/" + prop), "--executable %s is the property's" % executable)
        asserts.equals(env, "7", _argv_value(action.argv, "--timeout_seconds"), "--timeout_seconds")
        asserts.equals(env, ctx.workspace_name, _argv_value(action.argv, "--workspace"), "--workspace")
        fixtures = ctx.attr.fixtures[SealedFixturesInfo]
        for path in fixtures.rel_paths:
            asserts.true(env, path in inputs, "fixture %s is an input of the double run" % path)
    return analysistest.end(env)

gate_double_run_inputs_test = analysistest.make(
    _double_run_inputs_test_impl,
    attrs = {
        "property": attr.label(mandatory = True, doc = "The matched property."),
        "fixtures": attr.label(
            mandatory = True,
            providers = [SealedFixturesInfo],
            doc = "The property's sealed_fixtures.",
        ),
    },
    config_settings = {_CHANGED_PATHS: "tests/analysis/x/api/handler.py"},
)

# --- what the CLI builds, and how the runner is started -----------------------

def _config_and_entry_point_test_impl(ctx):
    env = analysistest.begin(ctx)
    target = analysistest.target_under_test(env)

    # The CLI reads the catalog by building this group under the gate's flags:
    # it must hold the config alone, never a property's result.
    config = [f.basename for f in target[OutputGroupInfo].agent_gate_config.to_list()]
    asserts.equals(env, [target.label.name + ".gate.json"], config, "files of output group agent_gate_config")

    runs = _double_runs(analysistest.target_actions(env))
    asserts.equals(env, 4, len(runs), "every property of the catalog is matched")

    for action in runs:
        property_id = _argv_value(action.argv, "--property_id")
        asserts.true(env, action.argv[0].endswith("python3"), "%s runs the interpreter, got %s" % (property_id, action.argv[0]))

        # One archive, the runner's: an action's sandbox links every input, and a
        # runfiles tree is hundreds of them (rules/private/zipapp.bzl).
        asserts.true(
            env,
            action.argv[1].endswith("/tools/run_property.zip"),
            "%s runs the runner's archive, got %s" % (property_id, action.argv[1]),
        )
        modules = [
            f.short_path
            for f in action.inputs.to_list()
            if f.extension in ("py", "pyc") and ("tools/agent_gate/" in f.short_path or "pypi" in f.short_path)
        ]
        asserts.equals(env, [], modules, "the tool's modules %s gets one by one" % property_id)
        asserts.equals(env, "", action.env.get("PYTHONPATH"), "PYTHONPATH of %s: none, whatever the caller's" % property_id)
    return analysistest.end(env)

# --- a full strong pass judges by its gate -----------------------------------

def _written_config(env):
    """The gate config the target under test writes, decoded (its one `.gate.json`)."""
    name = analysistest.target_under_test(env).label.name + ".gate.json"
    writes = [
        action
        for action in analysistest.target_actions(env)
        if action.outputs.to_list() and action.outputs.to_list()[0].basename == name
    ]
    asserts.equals(env, 1, len(writes), "one config written")
    return json.decode(writes[0].content)

def _full_pass_judges_by_its_gate_test_impl(ctx):
    env = analysistest.begin(ctx)
    config = _written_config(env)
    asserts.equals(env, "full_strong_pass", config["mode"])
    asserts.equals(env, ctx.attr.debt_cap, config["debt_cap"], "the gate's own debt cap, not a default")
    asserts.equals(env, ctx.attr.ledger, config["ledger"]["path"], "the gate's own ledger")
    asserts.equals(env, ctx.attr.expected_ids, [row["id"] for row in config["catalog"]], "the gate's catalog")
    return analysistest.end(env)

full_strong_pass_judges_by_its_gate_test = analysistest.make(
    _full_pass_judges_by_its_gate_test_impl,
    attrs = {
        "debt_cap": attr.int(mandatory = True),
        "ledger": attr.string(mandatory = True),
        "expected_ids": attr.string_list(mandatory = True),
    },
)

# --- unobserved_ok never excuses what a test reads -----------------------------

def _touched_closure_packages_test_impl(ctx):
    env = analysistest.begin(ctx)
    config = _written_config(env)
    asserts.equals(
        env,
        ctx.attr.expected,
        [row["touched_closure_packages"] for row in config["catalog"]][0],
        "the closure's packages holding a changed path under unobserved_ok",
    )
    asserts.equals(
        env,
        ctx.attr.expected_import_roots,
        [row["touched_import_roots"] for row in config["catalog"]][0],
        "the import roots at or above a changed path",
    )
    return analysistest.end(env)

# One path in the trees package (which the test reads a file of), under
# unobserved_ok; one path in testdata, not under it. Both lie below import roots
# (the root, testdata, trees): a directory there may be a namespace package.
_CLOSURE_PATHS = "tests/analysis/testdata/trees/new/page.md,tests/analysis/testdata/notes.md"

gate_touched_closure_packages_test = analysistest.make(
    _touched_closure_packages_test_impl,
    attrs = {"expected": attr.string_list(), "expected_import_roots": attr.string_list()},
    config_settings = {_CHANGED_PATHS: _CLOSURE_PATHS},
)

gate_config_and_entry_point_test = analysistest.make(
    _config_and_entry_point_test_impl,
    config_settings = {_CHANGED_PATHS: _ALL_PATHS},
)

# --- a fresh run id changes the command line ----------------------------------

_ActionsInfo = provider(
    doc = "The actions a target registered, for comparing two configurations of it.",
    fields = {"actions": "list of Action"},
)

def _actions_aspect_impl(target, _ctx):
    return [_ActionsInfo(actions = target.actions)]

_actions_aspect = aspect(
    implementation = _actions_aspect_impl,
    doc = "Exposes the target's actions to the test.",
)

_RUN_ID_ALPHA = "alpha-7f3c"
_RUN_ID_BETA = "beta-91d0"

def _run_id_test_impl(ctx):
    env = analysistest.begin(ctx)
    argvs = {}
    for run_id, targets in ((_RUN_ID_ALPHA, ctx.attr.gate_alpha), (_RUN_ID_BETA, ctx.attr.gate_beta)):
        # An attribute with a transition holds a list of one target.
        runs = _double_runs(targets[0][_ActionsInfo].actions)
        asserts.equals(env, 4, len(runs), "one double run per property with run id " + run_id)
        for action in runs:
            property_id = _argv_value(action.argv, "--property_id")
            asserts.equals(env, run_id, _argv_value(action.argv, "--run_id"), "--run_id of " + property_id)
            argvs.setdefault(property_id, {})[run_id] = action.argv
    for property_id, by_run in argvs.items():
        alpha = by_run.get(_RUN_ID_ALPHA)
        beta = by_run.get(_RUN_ID_BETA)
        asserts.true(env, alpha != None and beta != None, "%s runs under both run ids" % property_id)
        if alpha != None and beta != None:
            asserts.true(env, alpha != beta, "a new run id changes the command line of " + property_id)
            asserts.true(env, _RUN_ID_ALPHA in alpha and _RUN_ID_ALPHA not in beta, "argv of %s" % property_id)
            asserts.true(env, _RUN_ID_BETA in beta and _RUN_ID_BETA not in alpha, "argv of %s" % property_id)
    return analysistest.end(env)

def _with_run_id(run_id):
    return attr.label(
        mandatory = True,
        aspects = [_actions_aspect],
        cfg = analysis_test_transition(settings = {_CHANGED_PATHS: _ALL_PATHS, _RUN_ID: run_id}),
    )

# The same gate analyzed under two run ids: the argv of each double run must
# carry its run id, so Bazel cannot treat the second run as up to date.
gate_run_id_on_command_line_test = rule(
    implementation = _run_id_test_impl,
    attrs = {
        "gate_alpha": _with_run_id(_RUN_ID_ALPHA),
        "gate_beta": _with_run_id(_RUN_ID_BETA),
        "_impl_name": attr.string(default = "_run_id_test_impl"),
    },
    analysis_test = True,
    test = True,
)

def gate_test_suite(name):
    """Declares the catalog, the gates and the tests of this file, and a test_suite `name`.

    Args:
      name: name of the test_suite grouping the tests.
    """
    predicate = "//tests/analysis/testdata:pass_test"
    strong_property(
        name = "gate_api_strong",
        test = predicate,
        locality = ["tests/analysis/x/api"],
        fixtures = ["//tests/analysis/testdata/fix"],
        timeout_seconds = 7,
        tags = ["manual"],
    )
    strong_property(
        name = "gate_y_strong",
        test = predicate,
        locality = ["tests/analysis/y/"],
        tags = ["manual"],
    )
    weak_property(
        name = "gate_x_weak",
        test = predicate,
        locality = ["tests/analysis/x"],
        tags = ["manual"],
    )
    weak_property(
        name = "gate_z_weak",
        test = "//tests/analysis/testdata:predicate_test",
        locality = ["tests/analysis/z"],
        tags = ["manual"],
    )
    agent_gate(
        name = "gate_subject",
        properties = _CATALOG,
        ledger = "//tests/analysis/testdata:ledger.txtpb",
        debt_cap = 3,
    )
    full_strong_pass(
        name = "full_pass_subject",
        gate = ":gate_subject",
    )

    agent_gate(
        name = "gate_unsandboxed_subject",
        # Declared by provider_tests.bzl: its test's closure has `local = 1` generators.
        properties = [":unsandboxed_closure_property"],
        ledger = "//tests/analysis/testdata:ledger.txtpb",
    )
    agent_gate(
        name = "gate_unobserved_closure_subject",
        properties = [":unsandboxed_closure_property"],
        ledger = "//tests/analysis/testdata:ledger.txtpb",
        unobserved_ok = ["tests/analysis/testdata/trees/"],
    )
    gate_touched_closure_packages_test(
        name = "gate_touched_closure_packages_test",
        target_under_test = ":gate_unobserved_closure_subject",
        # Both packages hold trees/new/page.md; notes.md is not under unobserved_ok.
        expected = ["tests/analysis/testdata", "tests/analysis/testdata/trees"],
        # Every import root above a changed path: a namespace package may be named
        # by any directory below it (the evaluator decides by name).
        expected_import_roots = ["", "tests/analysis/testdata", "tests/analysis/testdata/trees"],
    )
    gate_touched_closure_packages_test(
        name = "gate_touched_closure_packages_without_unobserved_ok_test",
        target_under_test = ":gate_unsandboxed_subject",
        expected = [],
        # Import roots do not depend on unobserved_ok.
        expected_import_roots = ["", "tests/analysis/testdata", "tests/analysis/testdata/trees"],
    )
    gate_runs_only_the_named_property_test(
        name = "gate_runs_only_the_named_property_test",
        target_under_test = ":gate_subject",
        expected_ids = ["gate_y_strong"],
    )
    gate_skips_unsandboxed_closure_test(
        name = "gate_skips_unsandboxed_closure_test",
        target_under_test = ":gate_unsandboxed_subject",
        expected_ids = [],
    )
    gate_matches_locality_test(
        name = "gate_matches_locality_test",
        target_under_test = ":gate_subject",
        expected_ids = ["gate_api_strong", "gate_x_weak"],
    )
    gate_matches_per_component_test(
        name = "gate_matches_per_component_test",
        target_under_test = ":gate_subject",
        expected_ids = ["gate_x_weak"],
    )
    gate_matches_nothing_test(
        name = "gate_matches_nothing_test",
        target_under_test = ":gate_subject",
        expected_ids = [],
    )
    gate_no_changed_paths_test(
        name = "gate_no_changed_paths_test",
        target_under_test = ":gate_subject",
        expected_ids = [],
    )
    gate_matches_all_test(
        name = "gate_matches_all_test",
        target_under_test = ":gate_subject",
        expected_ids = ["gate_api_strong", "gate_x_weak", "gate_y_strong", "gate_z_weak"],
    )
    full_strong_pass_judges_by_its_gate_test(
        name = "full_strong_pass_judges_by_its_gate_test",
        target_under_test = ":full_pass_subject",
        debt_cap = 3,
        ledger = "tests/analysis/testdata/ledger.txtpb",
        expected_ids = ["gate_api_strong", "gate_y_strong", "gate_x_weak", "gate_z_weak"],
    )
    full_strong_pass_runs_every_strong_test(
        name = "full_strong_pass_runs_every_strong_test",
        target_under_test = ":full_pass_subject",
        expected_ids = ["gate_api_strong", "gate_y_strong"],
    )
    gate_double_run_sandbox_test(
        name = "gate_double_run_sandbox_test",
        target_under_test = ":gate_subject",
    )
    gate_double_run_inputs_test(
        name = "gate_double_run_inputs_test",
        target_under_test = ":gate_subject",
        property = ":gate_api_strong",
        fixtures = "//tests/analysis/testdata/fix",
    )
    gate_run_id_on_command_line_test(
        name = "gate_run_id_on_command_line_test",
        gate_alpha = ":gate_subject",
        gate_beta = ":gate_subject",
    )
    gate_config_and_entry_point_test(
        name = "gate_config_and_entry_point_test",
        target_under_test = ":gate_subject",
    )

    native.test_suite(
        name = name,
        tests = [
            ":gate_matches_locality_test",
            ":gate_matches_per_component_test",
            ":gate_matches_nothing_test",
            ":gate_no_changed_paths_test",
            ":gate_matches_all_test",
            ":full_strong_pass_runs_every_strong_test",
            ":full_strong_pass_judges_by_its_gate_test",
            ":gate_double_run_sandbox_test",
            ":gate_skips_unsandboxed_closure_test",
            ":gate_runs_only_the_named_property_test",
            ":gate_double_run_inputs_test",
            ":gate_run_id_on_command_line_test",
            ":gate_config_and_entry_point_test",
            ":gate_touched_closure_packages_test",
            ":gate_touched_closure_packages_without_unobserved_ok_test",
        ],
    )
