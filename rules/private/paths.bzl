"""Path helpers shared by agent_gate's rules."""

def repo_relative(file):
    """Path of a File relative to the root of the repository that owns it.

    Args:
      file: a source or generated File.

    Returns:
      The path as `find` run from that repository's root would print it.
    """
    path = file.short_path
    if path.startswith("../"):
        # External repository files: "../<repo>/<path>".
        path = path.split("/", 2)[2] if path.count("/") >= 2 else ""
    return path

def rlocation(ctx, file):
    """The runfiles path (`<repo>/<path>`) of a File, for the runfiles library.

    Args:
      ctx: the rule context (for the main repository's name).
      file: a File in the rule's runfiles.

    Returns:
      The path to hand to `Rlocation`.
    """
    path = file.short_path
    if path.startswith("../"):
        return path[3:]
    return ctx.workspace_name + "/" + path

def prefix_error(prefix):
    """Why a locality prefix or fixture root is invalid.

    Args:
      prefix: a repo-relative path prefix as a BUILD file spells it.

    Returns:
      A phrase saying what is wrong, or None for a valid prefix.
    """
    if not prefix:
        return "an empty path (remove the entry, or name a directory, e.g. \"api/handlers\")"
    if prefix.startswith("/"):
        return "an absolute path (use a repo-relative one, e.g. \"api/handlers\")"
    if "\\" in prefix or "\n" in prefix:
        return "a path with a backslash or newline (use forward slashes, e.g. \"api/handlers\")"
    trimmed = prefix[:-1] if prefix.endswith("/") else prefix
    for component in trimmed.split("/"):
        if component in ("", ".", ".."):
            return "a path with an empty, \".\" or \"..\" component (write it normalized, e.g. \"api/handlers\")"
    return None

def normalize_prefix(prefix):
    return prefix[:-1] if prefix.endswith("/") else prefix

def covers(prefix, path):
    """True when `prefix` covers `path` per path component."""
    return path == prefix or path.startswith(prefix + "/")
