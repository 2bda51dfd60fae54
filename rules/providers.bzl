"""Providers of agent_gate's rules."""

SealedFixturesInfo = provider(
    doc = "A fixture tree sealed by a digest committed in the repo.",
    fields = {
        "label": "Label of the `sealed_fixtures` target.",
        "root": "Repo-relative directory of the tree (what `find ROOT -type f` walks).",
        "files": "depset of the tree's files.",
        "expected_seal": "File: the committed seal (`<hex>  -` or bare hex).",
        "actual_seal": "File: the seal computed from `files` at build time.",
        "rel_paths": "list of the files' repo-relative paths.",
    },
)

PropertyInfo = provider(
    doc = "One catalog row: a test wrapped as a strong or weak property.",
    fields = {
        "id": "Catalog id, e.g. `counter.monotonic_under_replay`.",
        "strength": "`strong` or `weak`.",
        "locality": "list of repo-relative path prefixes, matched per path component.",
        "fixtures": "list of SealedFixturesInfo the property reads.",
        "executable": "File: the property's test executable.",
        "runfiles": "runfiles of the executable.",
        "label": "Label of the property target.",
        "test_label": "Label of the wrapped test, as the property names it.",
        "predicate_srcs": "list of repo-relative source paths of the wrapped test.",
        "test_packages": "list of repo-relative packages whose BUILD files declare the wrapped test (an alias and its target).",
        "package": "Repo-relative package whose BUILD file defines the property.",
        "timeout_seconds": "Per-run timeout of a double run.",
        "test_args": "list of the wrapped test's command-line words, as `bazel test` passes them.",
        "test_env": "dict of the wrapped test's `env`, as `bazel test` sets it.",
        "workspace_name": "Name of the workspace the wrapped test runs in (TEST_WORKSPACE).",
        "admission_mutants": "list of repo-relative patch files that must make the property fail twice.",
        "unsandboxed": "depset of `<label> (<why>)`: targets in the wrapped test's closure that would run unsandboxed.",
        "closure_packages": "depset of repo-relative packages of the wrapped test's closure in the main repository (its targets and their source files).",
        "import_roots": "depset of repo-relative directories that `imports` attributes in the wrapped test's closure put on Python's import path.",
        "generated_modules": "depset of repo-relative paths of the generated Python modules the wrapped test's closure takes.",
    },
)

AgentGateInfo = provider(
    doc = "What an `agent_gate` target judges by. `full_strong_pass` reads it, so the " +
          "scheduled pass runs the gate's own catalog under the gate's own ledger and debt cap.",
    fields = {
        "properties": "list of the catalog's property targets (each with PropertyInfo).",
        "ledger": "File: the freeze ledger.",
        "debt_cap": "int: open freezes (plus spent ones) above this stop the agent queue.",
        "rule_set_paths": "list of repo-relative prefixes that pin or vendor the gate itself.",
        "unobserved_ok": "list of repo-relative prefixes a patch may touch with no strong vote.",
    },
)
