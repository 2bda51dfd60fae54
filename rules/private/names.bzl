"""File names handed to an action in a params file, read back as their bytes.

Bazel 4.2.3 writes params files UTF-8-encoded twice (`café` as `cafÃ©`), Bazel 7
as the names are. The action gets `NAMES_PROBE` on its command line and as the
params file's first line, and compares them to learn which
(tools/agent_gate/formats/params_names.py).
"""

# Non-ASCII, or it could not tell the two writings apart.
NAMES_PROBE = "é"

def names_params(ctx, name_lists):
    """An Args holding the probe, then every name of `name_lists`, in a params file.

    Args:
      ctx: the rule context.
      name_lists: lists of repo-relative file names.

    Returns:
      The Args; pass `--names_probe NAMES_PROBE` on the command line with it.
    """
    names = ctx.actions.args()
    names.use_param_file("@%s", use_always = True)
    names.set_param_file_format("multiline")
    names.add(NAMES_PROBE)
    for name_list in name_lists:
        names.add_all(name_list)
    return names
