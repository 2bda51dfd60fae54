"""Path helpers shared by agent_gate's rules."""

# Characters no repo-relative prefix may hold: Bazel labels, git and the seal's
# coreutils pipeline would each read them differently.
_UNSPELLABLE = ["\\", "\n", "\r", "\0"]

# Characters no changed path may hold: a path is one line of the flag and the config.
_CONTROL = ["\n", "\r", "\0"]

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
    if [char for char in _UNSPELLABLE if char in prefix]:
        return "a path with a backslash, newline, carriage return or NUL byte (use forward slashes, e.g. \"api/handlers\")"
    trimmed = prefix[:-1] if prefix.endswith("/") else prefix
    for component in trimmed.split("/"):
        if component in ("", ".", ".."):
            return "a path with an empty, \".\" or \"..\" component (write it normalized, e.g. \"api/handlers\")"
    return None

def normalize_prefix(prefix):
    """A valid prefix without its optional trailing `/`."""
    return prefix[:-1] if prefix.endswith("/") else prefix

def covers(prefix, path):
    """True when the normalized `prefix` covers the normalized `path` per path component."""
    return path == prefix or path.startswith(prefix + "/")

def _path_components(path):
    """The components of a changed path, or None when it names no file of the repository.

    As the evaluator reads a changed path (`normalize_path` in
    tools/agent_gate/core/locality.py): empty and `.` components name the same file and
    are dropped; an absolute path, a `..` component, a control character or no
    component at all cannot be attributed to a repo path.
    """
    if path.startswith("/") or [char for char in _CONTROL if char in path]:
        return None
    parts = path.split("/")
    if "" in parts or "." in parts:
        parts = [part for part in parts if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return parts

def normalize_path(path):
    """A changed path in repo-relative form.

    Args:
      path: a changed path as the `changed_paths` flag carries it (decoded).

    Returns:
      The path without empty or `.` components, or None when it is absolute, has a
      `..` component or a newline, carriage return or NUL byte, or names no file.
    """
    parts = _path_components(path)
    return "/".join(parts) if parts != None else None

def matched_localities(localities, changed_paths):
    """Which localities a diff touches, per path component.

    A path the evaluator rejects (`normalize_path` returns None) matches nothing
    here; the evaluator reports it as an error, so the decision is never promote.

    Args:
      localities: a list with one list of normalized prefixes per property.
      changed_paths: the decoded changed paths.

    Returns:
      The sorted indices into `localities` of those some changed path lies under.
    """
    by_prefix = {}
    for index, prefixes in enumerate(localities):
        for prefix in prefixes:
            by_prefix.setdefault(prefix, []).append(index)
    hit = {}
    for path in changed_paths:
        parts = _path_components(path)
        if parts == None:
            continue
        prefix = ""
        for part in parts:
            prefix = prefix + "/" + part if prefix else part
            for index in by_prefix.get(prefix, []):
                hit[index] = True
    return sorted(hit.keys())

def directories_holding(paths, prefixes):
    """Every directory at or above a changed path under one of `prefixes`.

    Args:
      paths: the decoded changed paths.
      prefixes: normalized prefixes (a gate's `unobserved_ok`).

    Returns:
      A dict whose keys are those directories, repo-relative (`""`: the root).
    """
    directories = {}
    for path in paths:
        parts = _path_components(path)
        if parts == None or not [prefix for prefix in prefixes if covers(prefix, "/".join(parts))]:
            continue
        directory = ""
        directories[directory] = True
        for part in parts[:-1]:
            directory = directory + "/" + part if directory else part
            directories[directory] = True
    return directories

def module_roots(paths):
    """The directories a changed path would be a top-level Python module of.

    `d/x.py` is module `x` of the directory `d`; `d/x/__init__.py` is package `x` of it,
    and `d/x/y/z.py` may be namespace package `x` of it (the evaluator decides by name),
    so every directory above a changed path is one.

    Args:
      paths: the decoded changed paths.

    Returns:
      A dict whose keys are those directories, repo-relative (`""`: the root).
    """
    roots = {}
    for path in paths:
        parts = _path_components(path)
        if parts == None:
            continue
        for end in range(len(parts)):
            roots["/".join(parts[:end])] = True
    return roots

def normalized_paths(paths):
    """The changed paths, normalized (`a//b` is `a/b`); the ones that name no file are left out.

    Args:
      paths: the decoded changed paths.

    Returns:
      A dict whose keys are those paths.
    """
    files = {}
    for path in paths:
        parts = _path_components(path)
        if parts != None:
            files["/".join(parts)] = True
    return files

def roots_at_or_below_a_file(roots, files):
    """The import roots that are a changed file or lie below one.

    Python reads an archive on its import path (`imports = ["vendor.zip"]`, or
    `vendor.zip/lib`) as a directory: every module in it is top-level there.

    Args:
      roots: repo-relative import roots (`imports` in a test's closure).
      files: the changed paths, as `normalized_paths` returns them.

    Returns:
      The roots, in their order, each once.
    """
    found = {}
    for root in roots:
        parts = root.split("/") if root else []
        for end in range(1, len(parts) + 1):
            if "/".join(parts[:end]) in files:
                found[root] = True
                break
    return found.keys()

def module_at(path):
    """The import root a path would be a top-level Python module of, and that module.

    `R/x.py` is module `x` of root `R`, and so is `R/x/__init__.py` (package `x`);
    a name ends at its first dot (`x.cpython-311-x86_64-linux-gnu.so` is `x`).
    `module_at` in tools/agent_gate/core/path_guards.py is the same rule.

    Args:
      path: a repo-relative path.

    Returns:
      struct(root, module).
    """
    directory, _, name = path.rpartition("/")
    if name.startswith("__init__.") and directory:
        parent, _, package = directory.rpartition("/")
        return struct(root = parent, module = package)
    return struct(root = directory, module = name.split(".", 1)[0])

def decode_paths(value):
    """Changed paths from the flag: comma-separated, `%2C` and `%25` for `,` and `%` in a name.

    The inverse of `encode_path` in tools/agent_gate/drive/gate_flags.py. Names are kept byte
    for byte (no trimming), so no path can pose as another; empty items are skipped.

    Args:
      value: the `changed_paths` flag's value.

    Returns:
      The list of paths, in flag order.
    """
    paths = []
    for item in value.split(","):
        if item:
            paths.append("%".join([part.replace("%2C", ",") for part in item.split("%25")]))
    return paths
