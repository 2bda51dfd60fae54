"""adversarial_test on the Bazel 7.7.1 lane: the cases whose outcome depends on Bazel.

The same harness as tests/e2e/adversarial_test.py, with tools/bazel7 as the
Bazel the CLI runs: the monorepo under attack is built from its MODULE.bazel,
with the defaults Bazel 8 and 9 flipped (tools/bazel7.bazelrc). What runs here:
actions that opt out of the sandbox (`local = 1`, no-sandbox tags,
exec_properties, a base rule's execution requirements, a plain `bazel test` of
an unsandboxed closure (a genrule named by its label or by its output), a
`local = 1` genrule in a base local_repository in a locality, through the CLI
and plain `bazel test`), what runs on the host (a repository rule's script, a
`--workspace_status_command` script the base rc file names), rc-file routes
(the workspace .bazelrc, an imported rc file with --run_under, imports only
Bazel's own reader resolves, a nested rc file, the flags of a path list past 64
KiB through an rc file with crafted names), launcher routes (a tools/bazel, a
symlinked tools directory, a symlink loop), new files below Bazel's convenience
symlinks, a `.scl` file (Bazel >= 7 only) and an included `*.MODULE.bazel`.
The lane has no launcher: tools/bazel7 execs the sid root's Bazel binary, so
the case of a launcher committed at the base (Debian's 4.2.3 `bazel` script)
runs on the 4.2.3 lane only. One scoring worktree and so one server.

Needs root and the sid root (tools/bootstrap_bazel7).
Run: .venv/bin/python3 tests/e2e/bazel7_adversarial_test.py
"""

import lane

lane.use_bazel7()

from absl.testing import absltest  # noqa: E402
from adversarial_test import AdversarialTest  # noqa: E402

LANE_TESTS = {
    AdversarialTest: (
        # sandbox opt-outs
        "test_genrule_with_local_runs_in_the_sandbox_anyway",
        "test_genrule_tagged_no_sandbox_runs_in_the_sandbox_anyway",
        "test_genrule_with_exec_properties_runs_in_the_sandbox_anyway",
        "test_base_rule_that_opts_out_runs_in_the_sandbox_anyway",
        "test_plain_bazel_test_refuses_an_unsandboxed_closure_without_running_it",
        "test_plain_bazel_test_refuses_an_unsandboxed_genrule_named_by_its_output",
        "test_plain_bazel_test_refuses_the_legacy_nosandbox_key",
        "test_plain_bazel_test_refuses_a_generated_seal",
        "test_plain_bazel_test_refuses_a_generated_ledger",
        "test_plain_bazel_test_refuses_an_unsandboxed_target_behind_a_label_dict",
        "test_local_repository_of_the_base_in_a_locality",
        "test_plain_bazel_test_refuses_a_local_genrule_of_an_in_tree_repository",
        "test_plain_bazel_test_refuses_a_repository_named_like_bazels_own",
        "test_repository_rule_runs_a_script_from_a_locality",
        # rc-file routes
        "test_workspace_bazelrc_edit_forges_the_verdict_with_run_under",
        "test_imported_rc_file_forges_the_verdict_with_run_under",
        "test_imported_rc_file_of_any_name_forges_the_verdict_with_run_under",
        "test_rc_imports_bazel_reads_but_a_string_reader_misses",
        "test_a_script_the_base_rc_file_names_runs_on_the_host",
        "test_nested_bazel_configuration_files_anywhere",
        "test_crafted_names_through_the_rc_file_keep_every_later_path",
        "test_included_module_file_reconfigures_bazel",
        "test_scl_file_swaps_the_predicate",
        # launcher routes
        "test_repository_bazel_launcher_forges_the_verdict",
        "test_directory_symlink_makes_a_launcher_of_a_locality_file",
        "test_symlink_loop_through_the_launcher_does_not_hang",
        # what a test reads under unobserved_ok (the rule set's walk of its closure)
        "test_unobserved_ok_data_the_test_reads",
        "test_unobserved_ok_data_reached_through_an_alias",
        "test_module_shadowing_the_test_framework",
        "test_generated_module_shadowing_the_test_framework",
        "test_module_shadowing_the_test_framework_from_an_archive",
        # patched files written through Bazel's convenience symlinks
        "test_new_files_through_bazels_convenience_symlinks",
    )
}


def load_tests(loader, tests, pattern):  # unittest's load_tests protocol
    return lane.suite(loader, LANE_TESTS)


if __name__ == "__main__":
    absltest.main()
