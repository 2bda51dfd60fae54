"""python_zipapp (rules/private/zipapp.bzl): what goes into the archive, what stays in runfiles."""

load("@bazel_skylib//lib:unittest.bzl", "analysistest", "asserts")

# buildifier: disable=bzl-visibility
load("//rules/private:zipapp.bzl", "PythonAppInfo")

_DATA = "tests/analysis/testdata/zipapp/"

def _packed(argv, flag):
    """The archive names an argv passes after `flag` (`--site_module NAME SOURCE`)."""
    return [argv[i + 1] for i in range(len(argv) - 1) if argv[i] == flag]

def _site_split_test_impl(ctx):
    env = analysistest.begin(ctx)
    target = analysistest.target_under_test(env)
    runfiles = sorted([
        f.short_path[len(_DATA):]
        for f in target[DefaultInfo].default_runfiles.files.to_list()
        if f.short_path.startswith(_DATA)
    ])
    asserts.equals(
        env,
        ["app_zip.zip", "regular/__init__.py", "regular/_native.so", "space/native/_native.so"],
        runfiles,
        "runfiles: the archive, all of the library whose native module is in a regular package, and the namespace package's native module alone",
    )
    packs = [a for a in analysistest.target_actions(env) if a.mnemonic == "PythonZipapp"]
    asserts.equals(env, 1, len(packs), "one PythonZipapp action")
    asserts.equals(env, ["space/pure/__init__.py"], _packed(packs[0].argv, "--site_module"), "pip-like modules archived")
    asserts.equals(env, ["app/main.py"], _packed(packs[0].argv, "--module"), "this repository's modules archived")
    site = target[PythonAppInfo].site
    asserts.equals(env, 2, len([root for root in site if root.endswith("/" + _DATA.rstrip("/"))]), "both libraries' roots on PYTHONPATH, got %s" % site)
    return analysistest.end(env)

site_split_test = analysistest.make(_site_split_test_impl)

def zipapp_test_suite(name):
    site_split_test(
        name = "zipapp_site_split_test",
        target_under_test = "//tests/analysis/testdata/zipapp:app_zip",
    )
    native.test_suite(name = name, tests = [":zipapp_site_split_test"])
