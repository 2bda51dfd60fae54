"""Analysis tests: every analysis-time failure of agent_gate's rules, pinned.

Each test analyzes a target that must fail (with
`--allow_analysis_failures` set by analysistest) and checks that the message
starts with the failing target's label and states the fix. The subjects are
`manual`, so `bazel build //...` never analyzes them on its own.
"""

load("@bazel_skylib//lib:unittest.bzl", "analysistest", "asserts")
load("@rules_shell//shell:sh_test.bzl", "sh_test")
load("//rules:defs.bzl", "agent_gate", "strong_property", "weak_property")

_PREDICATE = "//tests/analysis/testdata:pass_test"
_LEDGER = "//tests/analysis/testdata:ledger.txtpb"
_TREES = "//tests/analysis/testdata/trees:"
_ID_FIX = "id %s may only use letters, digits, '.', '_' and '-' (e.g. \"counter.monotonic_under_replay\")."

def _failure_test_impl(ctx):
    env = analysistest.begin(ctx)
    target = analysistest.target_under_test(env)
    asserts.expect_failure(env, "%s: %s" % (target.label, ctx.attr.message))
    return analysistest.end(env)

_MESSAGE_ATTRS = {
    "message": attr.string(
        mandatory = True,
        doc = "The failure message after `<label of target_under_test>: `, fix included.",
    ),
}

failure_test = analysistest.make(
    _failure_test_impl,
    expect_failure = True,
    attrs = _MESSAGE_ATTRS,
)

def _commit_counts_failure_test_impl(ctx):
    env = analysistest.begin(ctx)

    target = analysistest.target_under_test(env)
    asserts.expect_failure(env, "%s: --@agent_gate//:commit_counts item %s" % (target.label, ctx.attr.message))
    return analysistest.end(env)

def _commit_counts_failure_test(value):
    return analysistest.make(
        _commit_counts_failure_test_impl,
        expect_failure = True,
        attrs = {
            "message": attr.string(mandatory = True, doc = "The failure message after the flag's name."),
        },
        config_settings = {str(Label("//:commit_counts")): value},
    )

# The subject resolves testdata/in_tree_python's toolchain, whose interpreter is a
# file of this repository, before every registered one.
in_tree_interpreter_failure_test = analysistest.make(
    _failure_test_impl,
    expect_failure = True,
    attrs = _MESSAGE_ATTRS,
    config_settings = {
        "//command_line_option:extra_toolchains": [str(Label("//tests/analysis/testdata/in_tree_python:toolchain"))],
    },
)

# A count that is not a number, after a well-formed item.
commit_counts_not_a_number_test = _commit_counts_failure_test("0123abc=2,abc123=three")

# An item without `=<count>`.
commit_counts_without_count_test = _commit_counts_failure_test("abc123")

# A count without a commit.
commit_counts_without_commit_test = _commit_counts_failure_test("=3")

def _property_case(name, rule, message, locality = ["tests/analysis/x"], test_override = None, **kwargs):
    """A property subject `<name>_subject` that must fail, and its failure test `name`."""
    rule(
        name = name + "_subject",
        test = test_override or _PREDICATE,
        locality = locality,
        tags = ["manual"],
        **kwargs
    )
    failure_test(
        name = name,
        target_under_test = ":%s_subject" % name,
        message = message,
    )
    return ":" + name

def _gate_case(name, message, properties = [], ledger = _LEDGER, **kwargs):
    """An agent_gate subject `<name>_subject` that must fail, and its failure test `name`."""
    agent_gate(
        name = name + "_subject",
        properties = properties,
        ledger = ledger,
        **kwargs
    )
    failure_test(
        name = name,
        target_under_test = ":%s_subject" % name,
        message = message,
    )
    return ":" + name

def _sealed_case(name, subject, message):
    """A failure test `name` of the sealed_fixtures target `subject` (declared in a BUILD file)."""
    failure_test(
        name = name,
        target_under_test = subject,
        message = message,
    )
    return ":" + name

def failure_test_suite(name):
    """Declares every failure subject and test of this file, and a test_suite `name`.

    Args:
      name: name of the test_suite grouping the tests.
    """
    tests = []

    # --- strong_property / weak_property ---------------------------------
    tests.append(_property_case(
        "strong_property_empty_locality_test",
        strong_property,
        locality = [],
        message = "a strong property needs a non-empty `locality`: the repo-relative path " +
                  "prefixes it observes, e.g. locality = [\"api/handlers\"].",
    ))
    tests.append(_property_case(
        "weak_property_empty_locality_test",
        weak_property,
        locality = [],
        message = "a weak property needs a non-empty `locality`: the repo-relative path " +
                  "prefixes it observes, e.g. locality = [\"api/handlers\"].",
    ))
    tests.append(_property_case(
        "locality_empty_entry_test",
        strong_property,
        locality = ["tests/analysis/x", ""],
        message = "locality entry \"\" is an empty path (remove the entry, or name a directory, e.g. \"api/handlers\").",
    ))
    tests.append(_property_case(
        "locality_absolute_test",
        strong_property,
        locality = ["/api"],
        message = "locality entry \"/api\" is an absolute path (use a repo-relative one, e.g. \"api/handlers\").",
    ))
    tests.append(_property_case(
        "locality_dotdot_test",
        weak_property,
        locality = ["api/../secrets"],
        message = "locality entry \"api/../secrets\" is a path with an empty, \".\" or \"..\" component " +
                  "(write it normalized, e.g. \"api/handlers\").",
    ))
    tests.append(_property_case(
        "locality_dot_test",
        strong_property,
        locality = ["./api"],
        message = "locality entry \"./api\" is a path with an empty, \".\" or \"..\" component " +
                  "(write it normalized, e.g. \"api/handlers\").",
    ))
    tests.append(_property_case(
        "locality_empty_component_test",
        strong_property,
        locality = ["a//b"],
        message = "locality entry \"a//b\" is a path with an empty, \".\" or \"..\" component " +
                  "(write it normalized, e.g. \"api/handlers\").",
    ))
    tests.append(_property_case(
        "locality_backslash_test",
        strong_property,
        locality = ["api\\handlers"],
        message = "locality entry \"api\\\\handlers\" is a path with a backslash, newline, " +
                  "carriage return or NUL byte (use forward slashes, e.g. \"api/handlers\").",
    ))
    tests.append(_property_case(
        "locality_carriage_return_test",
        weak_property,
        locality = ["api\rhandlers"],
        message = "locality entry \"api\\rhandlers\" is a path with a backslash, newline, " +
                  "carriage return or NUL byte (use forward slashes, e.g. \"api/handlers\").",
    ))
    tests.append(_property_case(
        "id_with_space_test",
        strong_property,
        id = "no secret fields",
        message = _ID_FIX % "\"no secret fields\"",
    ))
    tests.append(_property_case(
        "id_with_tab_test",
        weak_property,
        id = "keys\tpresent",
        message = _ID_FIX % "\"keys\\tpresent\"",
    ))
    tests.append(_property_case(
        "id_escaping_the_package_test",
        strong_property,
        id = "../../escape",
        message = _ID_FIX % "\"../../escape\"",
    ))
    tests.append(_property_case(
        "id_with_slash_test",
        weak_property,
        id = "resp/keys",
        message = _ID_FIX % "\"resp/keys\"",
    ))
    for subject, why in [
        ("env_inherit_test", "`env_inherit` [\"HOME\"] (a run never sees the caller's environment)"),
        ("unknown_variable_test", "`args` item \"--cc=$(NO_SUCH_VARIABLE)\": unknown Make variable `$(NO_SUCH_VARIABLE)`"),
        ("runner_owned_env_test", "`env` key \"TEST_TMPDIR\" (the gate's runner sets it for each run)"),
        ("unterminated_quote_test", "`args` item \"'open\": unterminated quotation"),
    ]:
        test = "//tests/analysis/testdata:" + subject
        tests.append(_property_case(
            "wrapped_" + subject,
            strong_property,
            test_override = test,
            message = "the double run cannot invoke the wrapped test %s as `bazel test` does: %s. " % (Label(test), why) +
                      "Move what it needs into the test itself.",
        ))

    # Declared in this package before its property: the macro leaves a test with
    # `env_inherit` to the aspect, which refuses it the same way.
    sh_test(
        name = "here_env_inherit_test",
        srcs = ["here/check.sh"],
        args = ["--mode=strict"],
        env_inherit = ["PATH"],
        tags = ["manual"],
    )
    tests.append(_property_case(
        "wrapped_test_here_env_inherit_test",
        weak_property,
        test_override = ":here_env_inherit_test",
        message = "the double run cannot invoke the wrapped test %s as `bazel test` does: " % Label("//tests/analysis:here_env_inherit_test") +
                  "`env_inherit` [\"PATH\"] (a run never sees the caller's environment). " +
                  "Move what it needs into the test itself.",
    ))
    tests.append(_property_case(
        "timeout_zero_test",
        strong_property,
        timeout_seconds = 0,
        message = "timeout_seconds must be positive, got 0.",
    ))
    tests.append(_property_case(
        "timeout_negative_test",
        weak_property,
        timeout_seconds = -5,
        message = "timeout_seconds must be positive, got -5.",
    ))

    # --- agent_gate --------------------------------------------------------
    strong_property(
        name = "duplicate_id_first",
        id = "dup.id",
        test = _PREDICATE,
        locality = ["tests/analysis/x"],
        tags = ["manual"],
    )
    weak_property(
        name = "duplicate_id_second",
        id = "dup.id",
        test = _PREDICATE,
        locality = ["tests/analysis/y"],
        tags = ["manual"],
    )
    tests.append(_gate_case(
        "gate_duplicate_ids_test",
        properties = [":duplicate_id_first", ":duplicate_id_second"],
        # Labels as this Bazel spells them: `//pkg:name`, or `@@//pkg:name` under bzlmod.
        message = "property id \"dup.id\" is declared twice, by %s and %s; ids must be unique in a catalog." % (
            Label("//tests/analysis:duplicate_id_first"),
            Label("//tests/analysis:duplicate_id_second"),
        ),
    ))
    tests.append(_gate_case(
        "gate_generated_ledger_test",
        ledger = "//tests/analysis/testdata:generated_ledger",
        message = "the ledger tests/analysis/testdata/generated_ledger.txtpb is generated; it " +
                  "must be a committed source file (e.g. ledger.txtpb).",
    ))
    tests.append(_gate_case(
        "gate_negative_debt_cap_test",
        debt_cap = -1,
        message = "debt_cap must be >= 0, got -1.",
    ))
    tests.append(_gate_case(
        "gate_rule_set_path_absolute_test",
        rule_set_paths = ["MODULE.bazel", "/etc/agent_gate"],
        message = "rule_set_paths entry \"/etc/agent_gate\" is an absolute path " +
                  "(use a repo-relative one, e.g. \"api/handlers\").",
    ))
    tests.append(_gate_case(
        "gate_rule_set_path_dotdot_test",
        rule_set_paths = ["../vendor/agent_gate"],
        message = "rule_set_paths entry \"../vendor/agent_gate\" is a path with an empty, \".\" or \"..\" " +
                  "component (write it normalized, e.g. \"api/handlers\").",
    ))

    agent_gate(
        name = "gate_bad_commit_counts_subject",
        properties = [],
        ledger = _LEDGER,
    )
    commit_counts_not_a_number_test(
        name = "gate_commit_counts_not_a_number_test",
        target_under_test = ":gate_bad_commit_counts_subject",
        message = "\"abc123=three\" is not `<commit>=<count>` (e.g. 3f2a9c1=4).",
    )
    commit_counts_without_count_test(
        name = "gate_commit_counts_without_count_test",
        target_under_test = ":gate_bad_commit_counts_subject",
        message = "\"abc123\" is not `<commit>=<count>` (e.g. 3f2a9c1=4).",
    )
    commit_counts_without_commit_test(
        name = "gate_commit_counts_without_commit_test",
        target_under_test = ":gate_bad_commit_counts_subject",
        message = "\"=3\" is not `<commit>=<count>` (e.g. 3f2a9c1=4).",
    )
    tests.append(":gate_commit_counts_without_commit_test")
    tests.append(":gate_commit_counts_not_a_number_test")
    tests.append(":gate_commit_counts_without_count_test")

    agent_gate(
        name = "gate_in_tree_interpreter_test_subject",
        ledger = _LEDGER,
        properties = [],
        tags = ["manual"],
    )
    in_tree_interpreter_failure_test(
        name = "gate_in_tree_interpreter_test",
        target_under_test = ":gate_in_tree_interpreter_test_subject",
        message = "agent_gate's tools would run on a Python toolchain with files in this " +
                  "repository (tests/analysis/testdata/in_tree_python/python3.sh), which a patch " +
                  "can edit to forge the verdict.",
    )
    tests.append(":gate_in_tree_interpreter_test")

    # --- sealed_fixtures (subjects in testdata/trees) ------------------------
    tests.append(_sealed_case(
        "sealed_src_outside_tree_test",
        _TREES + "src_outside_tree",
        message = "tests/analysis/testdata/trees/outside.txt is outside the fixture tree " +
                  "tests/analysis/testdata/trees/inside; list only files under it (or set `root`).",
    ))
    tests.append(_sealed_case(
        "sealed_seal_generated_test",
        _TREES + "seal_generated",
        message = "the seal tests/analysis/testdata/trees/generated.seal is generated; it must be " +
                  "the committed seal file (`bazel run :seal_generated.update_seal` writes it).",
    ))
    tests.append(_sealed_case(
        "sealed_src_is_root_test",
        _TREES + "src_is_root",
        message = "tests/analysis/testdata/trees/inside/x.txt is outside the fixture tree " +
                  "tests/analysis/testdata/trees/inside/x.txt; list only files under it (or set `root`).",
    ))
    tests.append(_sealed_case(
        "sealed_src_generated_test",
        _TREES + "src_generated",
        message = "tests/analysis/testdata/trees/inside/generated.txt is generated; " +
                  "sealed fixtures must be committed source files.",
    ))
    tests.append(_sealed_case(
        "sealed_seal_in_tree_without_suffix_test",
        _TREES + "seal_in_tree_without_suffix",
        message = "the seal file tests/analysis/testdata/trees/inside/seal.txt is inside the tree " +
                  "tests/analysis/testdata/trees/inside but does not end in `.seal`, so the seal " +
                  "would hash itself. Name it `<something>.seal`.",
    ))
    tests.append(_sealed_case(
        "sealed_root_absolute_test",
        _TREES + "root_absolute",
        message = "root = \"/inside\" is an absolute path (use a repo-relative one, e.g. \"api/handlers\").",
    ))
    tests.append(_sealed_case(
        "sealed_root_dotdot_test",
        _TREES + "root_dotdot",
        message = "root = \"../trees/inside\" is a path with an empty, \".\" or \"..\" component " +
                  "(write it normalized, e.g. \"api/handlers\").",
    ))

    native.test_suite(
        name = name,
        tests = tests,
    )
