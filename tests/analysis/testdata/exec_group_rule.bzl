"""A rule whose action runs in an exec group of its own, as rule sets' compile steps do.

Bazel 4.2.3 has exec groups behind an experimental flag: there the rule has none,
and the key is the plain one.
"""

_EXEC_GROUPS = hasattr(config_common, "toolchain_type")  # Bazel >= 6

# The opt-out the target sets: for its `compile` exec group's actions only.
OPT_OUT_KEY = "compile.no-sandbox" if _EXEC_GROUPS else "no-sandbox"

def _grouped_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".txt")
    group = {"exec_group": "compile"} if _EXEC_GROUPS else {}
    ctx.actions.run_shell(outputs = [out], command = "echo > " + out.path, **group)
    return [DefaultInfo(files = depset([out]))]

grouped = rule(
    implementation = _grouped_impl,
    **({"exec_groups": {"compile": exec_group()}} if _EXEC_GROUPS else {})
)
