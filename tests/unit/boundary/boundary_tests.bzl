"""The Starlark half of the shared boundary cases: every row, through rules/private/paths.bzl.

boundary_test.py runs the same rows through the Python implementations.
"""

load("@bazel_skylib//lib:unittest.bzl", "asserts", "unittest")

# The helpers themselves, not through a rule: the same rows run in Python.
# buildifier: disable=bzl-visibility
load(
    "//rules/private:paths.bzl",
    "covers",
    "decode_paths",
    "matched_localities",
    "module_at",
    "normalize_path",
    "normalize_prefix",
    "prefix_error",
)
load(":encoding_cases.bzl", "DECODE_ONLY_CASES", "ENCODING_CASES", "UNENCODABLE_PATHS")
load(":locality_cases.bzl", "MATCH_CASES", "PATH_CASES")
load(":module_cases.bzl", "MODULE_CASES")
load(":prefix_cases.bzl", "PREFIX_CASES")

def _prefix_test_impl(ctx):
    env = unittest.begin(ctx)
    for case in PREFIX_CASES:
        prefix = case["prefix"]
        problem = prefix_error(prefix)
        asserts.equals(env, case["valid"], problem == None, "prefix_error(%r) = %r" % (prefix, problem))
        if problem == None:
            asserts.equals(env, case["normal"], normalize_prefix(prefix), "normalize_prefix(%r)" % prefix)
    return unittest.end(env)

prefix_test = unittest.make(_prefix_test_impl)

def _path_test_impl(ctx):
    env = unittest.begin(ctx)
    for case in PATH_CASES:
        asserts.equals(env, case["normal"], normalize_path(case["path"]), "normalize_path(%r)" % case["path"])
    return unittest.end(env)

path_test = unittest.make(_path_test_impl)

def _match_test_impl(ctx):
    env = unittest.begin(ctx)
    for case in MATCH_CASES:
        ids = list(case["localities"].keys())
        localities = []
        for property_id in ids:
            prefixes = case["localities"][property_id]
            for prefix in prefixes:
                asserts.equals(env, None, prefix_error(prefix), "%s: locality %r" % (case["name"], prefix))

            # As the property rule hands them to the gate rule.
            localities.append([normalize_prefix(prefix) for prefix in prefixes])
        matched = [ids[index] for index in matched_localities(localities, case["paths"])]
        asserts.equals(env, sorted(case["matched"]), sorted(matched), case["name"])

        # `covers`, which the rules use for fixture roots, agrees path by path.
        covered = {}
        for path in case["paths"]:
            normal = normalize_path(path)
            for index, prefixes in enumerate(localities):
                if normal != None and [p for p in prefixes if covers(p, normal)]:
                    covered[ids[index]] = True
        asserts.equals(env, sorted(case["matched"]), sorted(covered.keys()), case["name"] + " (covers)")
    return unittest.end(env)

match_test = unittest.make(_match_test_impl)

def _encoding_test_impl(ctx):
    env = unittest.begin(ctx)
    for case in ENCODING_CASES + DECODE_ONLY_CASES:
        asserts.equals(env, case["paths"], decode_paths(case["flag"]), "decode_paths(%r)" % case["flag"])

    # What the CLI refuses to send, the rule would never match either.
    for path in UNENCODABLE_PATHS:
        asserts.equals(env, None, normalize_path(path), "normalize_path(%r)" % path)
    return unittest.end(env)

encoding_test = unittest.make(_encoding_test_impl)

def _module_test_impl(ctx):
    env = unittest.begin(ctx)
    for case in MODULE_CASES:
        found = module_at(case["path"])
        asserts.equals(env, (case["root"], case["module"]), (found.root, found.module), "module_at(%r)" % case["path"])
    return unittest.end(env)

module_test = unittest.make(_module_test_impl)

def boundary_test_suite(name):
    """The five Starlark tests of the shared cases, as one test_suite.

    Args:
      name: name of the test_suite.
    """
    unittest.suite(
        name,
        prefix_test,
        path_test,
        match_test,
        encoding_test,
        module_test,
    )
