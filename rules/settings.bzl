"""The build settings of agent_gate: string flags defined in its root BUILD.bazel."""

FlagValueInfo = provider(
    doc = "The value of an agent_gate build setting.",
    fields = {"value": "The string given on the command line."},
)

def _string_flag_impl(ctx):
    return [FlagValueInfo(value = ctx.build_setting_value)]

string_flag = rule(
    implementation = _string_flag_impl,
    doc = "A string flag, set as `--@agent_gate//:NAME=value`.",
    build_setting = config.string(flag = True),
)
