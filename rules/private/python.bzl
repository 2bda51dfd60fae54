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
