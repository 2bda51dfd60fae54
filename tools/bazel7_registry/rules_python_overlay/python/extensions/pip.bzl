"""The Bazel 7.7.1 lane's stand-in for rules_python's `pip` extension.

Debian's rules_python (0.22.1) has no `hub_name`, and a real `pip.parse`
downloads wheels. On this offline lane each hub is a package of
`py_library` targets, one per distribution the lock file names (normalized as
rules_python names them: `@hub//pyyaml`, with a `:pkg` alias), each linking the
distribution's modules and those of what it requires from Debian's Python in the
sid root (python3-absl, -yaml, -protobuf, -hypothesis, -grpc-tools). Like a real
hub's wheels, they reach a binary through its runfiles, whatever interpreter runs it. `bazel_runfiles` is the exception:
Debian does not package it, so its target carries rules_python's own
`runfiles` library under the import name the pip distribution uses.
"""

_SEPARATORS = ["=", "<", ">", "~", "!", "[", ";", " ", "\\", "@"]

def _distributions(text):
    """The normalized distribution names a requirements file pins, in order."""
    names = []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if not line or line.startswith("-"):
            continue
        end = len(line)
        for separator in _SEPARATORS:
            at = line.find(separator)
            if at != -1 and at < end:
                end = at
        name = line[:end].lower().replace("-", "_").replace(".", "_")
        if name and name not in names:
            names.append(name)
    return names

# Prints `<distribution>\t<path>` for every top-level module of each named
# distribution and of the distributions it requires, transitively.
_LIST_MODULES = """
import importlib.metadata as md, re, sys
def norm(name):
    return re.sub(r"[-_.]+", "_", name).lower()
def closure(name):
    seen, todo = set(), [name]
    while todo:
        current = norm(todo.pop())
        if current in seen:
            continue
        try:
            dist = md.distribution(current)
        except md.PackageNotFoundError:
            continue
        seen.add(current)
        yield dist
        for req in dist.requires or ():
            if "extra ==" not in req:
                todo.append(re.split(r"[^A-Za-z0-9._-]", req.strip(), maxsplit=1)[0])
for name in sys.argv[1:]:
    tops = set()
    for dist in closure(name):
        listed = (dist.read_text("top_level.txt") or "").split()
        listed += [file.parts[0] for file in dist.files or ()]
        for top in listed:
            if top != ".." and not top.endswith((".dist-info", ".egg-info")) and top != "__pycache__":
                for path in (dist.locate_file(top), dist.locate_file(top + ".py")):
                    if path.exists():
                        tops.add(str(path))
    for top in sorted(tops):
        print(name + "\\t" + top)
"""

_LIBRARY = """\
# From the sid root's Debian Python (tools/bazel7 lane), on the PYTHONPATH of
# whatever depends on it.
py_library(
    name = "{name}",
    srcs = glob(["site/**/*.py"], allow_empty = True),
    # The environment's compiled modules too: every action that imports
    # protobuf would otherwise compile it again, in a sandbox it cannot cache in.
    data = glob(
        ["site/**"],
        exclude = ["site/**/*.py"],
        allow_empty = True,
    ),
    imports = ["site"],
    visibility = ["//visibility:public"],
)

alias(
    name = "pkg",
    actual = ":{name}",
    visibility = ["//visibility:public"],
)
"""

_RUNFILES = """\
# rules_python's runfiles library, importable as `runfiles` like the pip package.
py_library(
    name = "bazel_runfiles",
    srcs = ["runfiles/__init__.py", "runfiles/runfiles.py"],
    imports = ["."],
    visibility = ["//visibility:public"],
)

alias(
    name = "pkg",
    actual = ":bazel_runfiles",
    visibility = ["//visibility:public"],
)
"""

def _hub_impl(rctx):
    rctx.file("WORKSPACE", "")
    rctx.file("BUILD.bazel", "")
    listing = rctx.execute(["/usr/bin/python3", "-c", _LIST_MODULES] + rctx.attr.distributions)
    if listing.return_code != 0:
        fail("pip.parse: cannot list the sid root's Python packages: " + listing.stderr)
    for line in listing.stdout.splitlines():
        name, path = line.split("\t")
        if name != "bazel_runfiles":
            rctx.symlink(path, name + "/site/" + path.split("/")[-1])
    for name in rctx.attr.distributions:
        if name == "bazel_runfiles":
            for source in ["__init__.py", "runfiles.py"]:
                rctx.symlink(Label("//python/runfiles:" + source), "bazel_runfiles/runfiles/" + source)
            rctx.file("bazel_runfiles/BUILD.bazel", _RUNFILES)
        else:
            rctx.file(name + "/BUILD.bazel", _LIBRARY.format(name = name))

_hub = repository_rule(
    implementation = _hub_impl,
    attrs = {"distributions": attr.string_list()},
)

def _pip_impl(module_ctx):
    hubs = {}
    owners = {}
    for mod in module_ctx.modules:
        for parse in mod.tags.parse:
            # rules_python refuses one hub name in two modules; so does the lane,
            # or it would pass a MODULE.bazel that fails for users.
            owner = owners.setdefault(parse.hub_name, mod.name)
            if owner != mod.name:
                fail(("pip.parse: hub_name %r is used by both %r and %r; a hub name must be " +
                      "unique across modules") % (parse.hub_name, owner, mod.name))
            names = hubs.setdefault(parse.hub_name, [])
            lock = parse.requirements_lock or parse.requirements_linux
            if not lock:
                fail("pip.parse(hub_name = %r): the tools/bazel7 lane needs requirements_lock" % parse.hub_name)
            for name in _distributions(module_ctx.read(lock)):
                if name not in names:
                    names.append(name)
    for hub_name, names in hubs.items():
        _hub(name = hub_name, distributions = names)

pip = module_extension(
    implementation = _pip_impl,
    doc = "`pip.parse` hubs of the sid root's Debian packages; nothing is downloaded (tools/bazel7 lane).",
    tag_classes = {
        "parse": tag_class(
            attrs = {
                "download_only": attr.bool(),
                "enable_implicit_namespace_pkgs": attr.bool(),
                "environment": attr.string_dict(),
                "envsubst": attr.string_list(),
                "experimental_index_url": attr.string(),
                "extra_pip_args": attr.string_list(),
                "hub_name": attr.string(mandatory = True),
                "isolated": attr.bool(),
                "pip_data_exclude": attr.string_list(),
                "python_version": attr.string(),
                "quiet": attr.bool(),
                "requirements_linux": attr.label(),
                "requirements_lock": attr.label(),
                "timeout": attr.int(),
            },
        ),
    },
)
