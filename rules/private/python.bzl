"""The Python toolchain's interpreter, as agent_gate's actions run it."""

load(":paths.bzl", "rlocation")

PYTHON_TOOLCHAIN = "@bazel_tools//tools/python:toolchain_type"

# Bazel >= 6 (which added config_common.toolchain_type) wants the toolchain whose
# interpreter an action runs named on the action, or it cannot tell under
# --incompatible_auto_exec_groups; Bazel 4.2.3 knows no such parameter.
ACTION_TOOLCHAIN = {"toolchain": PYTHON_TOOLCHAIN} if hasattr(config_common, "toolchain_type") else {}

def python_interpreter(ctx):
    """The Python toolchain's interpreter: its path in actions and in runfiles, and its files.

    Args:
      ctx: the context of a rule with `toolchains = [PYTHON_TOOLCHAIN]`.

    Returns:
      struct(exec_path, runfiles_path, files).
    """
    runtime = ctx.toolchains[PYTHON_TOOLCHAIN].py3_runtime
    if runtime == None:
        fail("%s: the registered Python toolchain has no Python 3 runtime; agent_gate needs one." % ctx.label)
    if runtime.interpreter:
        return struct(
            exec_path = runtime.interpreter.path,
            runfiles_path = "$runfiles/" + rlocation(ctx, runtime.interpreter),
            files = runtime.files,
        )
    return struct(
        exec_path = runtime.interpreter_path,
        runfiles_path = runtime.interpreter_path,
        files = depset(),
    )

def editable_interpreter_files(ctx):
    """The Python toolchain's files that a patch can edit: the main repository's.

    agent_gate's own actions and the gate test run on this interpreter, so one a
    patch can rewrite (an in-tree wrapper script, a `local = 1` genrule among its
    `files`) could forge the verdict or run on the host before anything is judged.

    Args:
      ctx: the context of a rule with `toolchains = [PYTHON_TOOLCHAIN]`.

    Returns:
      The repo-relative paths of its interpreter and files in the main repository.
    """
    runtime = ctx.toolchains[PYTHON_TOOLCHAIN].py3_runtime
    if runtime == None:
        return []
    files = runtime.files.to_list() if runtime.files else []
    if runtime.interpreter:
        files = [runtime.interpreter] + files
    return {file.short_path: None for file in files if not file.short_path.startswith("../")}.keys()
