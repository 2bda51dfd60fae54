"""Path helpers shared by agent_gate's rules."""

def repo_relative(file):
    """Path of a File relative to the root of the repository that owns it."""
    path = file.short_path
    if path.startswith("../"):
        # External repository files: "../<repo>/<path>".
        path = path.split("/", 2)[2] if path.count("/") >= 2 else ""
    return path

def rlocation(ctx, file):
    """The runfiles path (`<repo>/<path>`) of a File, for the runfiles library."""
    path = file.short_path
    if path.startswith("../"):
        return path[3:]
    return ctx.workspace_name + "/" + path

def prefix_error(prefix):
    """Why a locality prefix or fixture root is invalid, or None."""
    if not prefix:
        return "an empty path"
    if prefix.startswith("/"):
        return "an absolute path (use a repo-relative one, e.g. \"api/handlers\")"
    if "\\" in prefix or "\n" in prefix:
        return "a path with a backslash or newline"
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
