"""Unit tests of how a wrapped test's `args` and `env` are expanded and split.

The cases are what Bazel 4.2.3 and 7.7.1 gave a `sh_test` under `bazel test`
(docs/rules.md); the aspect's own use is pinned in provider_tests.bzl.
"""

load("@bazel_skylib//lib:unittest.bzl", "asserts", "unittest")

# The expansion is private API, tested here directly as a library.
# buildifier: disable=bzl-visibility
load("//rules/private:test_invocation.bzl", "expand_template", "invocation", "tokenize")

def _fake_expand_location(text, targets):
    """`$(FUNCTION LABEL)` -> `FUNCTION<LABEL>` plus the targets, to see what was asked."""
    function, _, label = text[2:-1].partition(" ")
    return "%s<%s>%s" % (function, label, "".join(targets))

_LOCATOR = struct(expand_location = _fake_expand_location, targets = ["+data"])
_VARIABLES = {"COMPILATION_MODE": "fastbuild", "LOOP": "$(LOOP)"}

def _expand_test_impl(ctx):
    env = unittest.begin(ctx)
    for text, expected in [
        ("plain", "plain"),
        ("", ""),
        ("$$HOME and $$$$", "$HOME and $$"),
        ("$(location :x)", "rootpath<:x>+data"),
        ("$(locations  //a:b )", "rootpaths<//a:b>+data"),
        ("$(rootpath x.txt)-$(execpath :g)", "rootpath<x.txt>+data-execpath<:g>+data"),
        ("$(rootpaths :x) $(execpaths :y)", "rootpaths<:x>+data execpaths<:y>+data"),
        ("mode=$(COMPILATION_MODE)", "mode=fastbuild"),
        # Not re-scanned: an expansion's own `$` is kept.
        ("$$(location :x)", "$(location :x)"),
    ]:
        result = expand_template(text, _LOCATOR, _VARIABLES)
        asserts.equals(env, "", result.error, "error of %r" % text)
        asserts.equals(env, expected, result.value, "expansion of %r" % text)
    for text, error in [
        ("$(NOPE)", "unknown Make variable `$(NOPE)`"),
        ("$(LOOP)", "Make variable `$(LOOP)` expands to another template"),
        ("$(cc_binary :x)", "unknown function `$(cc_binary ...)`"),
        ("$HOME", "a `$` must start `$(...)` or be written `$$`"),
        ("${HOME}", "a `$` must start `$(...)` or be written `$$`"),
        ("trailing $", "a `$` must start `$(...)` or be written `$$`"),
        ("$(location :x", "unterminated `$(`"),
    ]:
        result = expand_template(text, _LOCATOR, _VARIABLES)
        asserts.equals(env, None, result.value, "value of %r" % text)
        asserts.equals(env, "%r: %s" % (text, error), result.error, "error of %r" % text)
    return unittest.end(env)

expand_test = unittest.make(_expand_test_impl)

def _tokenize_test_impl(ctx):
    env = unittest.begin(ctx)
    for text, expected in [
        ("a b\tc", ["a", "b", "c"]),
        ("  a   b  ", ["a", "b"]),
        ("", []),
        ("''", [""]),
        ("a '' b", ["a", "", "b"]),
        ("'two words'", ["two words"]),
        ("x'y z'w", ["xy zw"]),
        ("\"a\\\\b\"", ["a\\b"]),
        ("\"q\\\"q\"", ["q\"q"]),
        ("\"keep\\n\"", ["keep\\n"]),
        ("'no \\ escape'", ["no \\ escape"]),
        ("a\\ b", ["a b"]),
        ("new\nline", ["new\nline"]),
        ("\"$HOME\"", ["$HOME"]),
    ]:
        result = tokenize(text)
        asserts.equals(env, "", result.error, "error of %r" % text)
        asserts.equals(env, expected, result.words, "words of %r" % text)
    for text, error in [
        ("'open", "unterminated quotation"),
        ("\"open", "unterminated quotation"),
        ("end\\", "backslash at end of string"),
    ]:
        result = tokenize(text)
        asserts.equals(env, None, result.words, "words of %r" % text)
        asserts.equals(env, "%r: %s" % (text, error), result.error, "error of %r" % text)
    return unittest.end(env)

tokenize_test = unittest.make(_tokenize_test_impl)

def _invocation_test_impl(ctx):
    env = unittest.begin(ctx)
    invoked = invocation(
        args = ["--a='x y' $(location :d)", "plain"],
        env = {"B": "'not split' $(rootpath :d)", "A": "$$1"},
        env_inherit = [],
        locator = _LOCATOR,
        variables = _VARIABLES,
    )
    asserts.equals(env, ["--a=x y", "rootpath<:d>+data", "plain"], invoked.args, "args: expanded, then split")
    asserts.equals(env, {"A": "$1", "B": "'not split' rootpath<:d>+data"}, invoked.env, "env: expanded, not split")
    asserts.equals(env, [], invoked.refusals, "nothing refused")
    refused = invocation(
        args = ["ok", "$(NOPE)", "'open"],
        env = {"TMPDIR": "/x", "V": "$X", "OK": "1"},
        env_inherit = ["PATH"],
        locator = _LOCATOR,
        variables = _VARIABLES,
    )
    asserts.equals(env, ["ok"], refused.args, "what could be expanded")
    asserts.equals(env, [
        "`args` item \"$(NOPE)\": unknown Make variable `$(NOPE)`",
        "`args` item \"'open\": unterminated quotation",
        "`env` key \"TMPDIR\" (the gate's runner sets it for each run)",
        "`env` value of \"V\": \"$X\": a `$` must start `$(...)` or be written `$$`",
        "`env_inherit` [\"PATH\"] (a run never sees the caller's environment)",
    ], refused.refusals, "each refusal names the attribute and the value")
    return unittest.end(env)

invocation_test = unittest.make(_invocation_test_impl)

def invocation_test_suite(name):
    unittest.suite(name, expand_test, tokenize_test, invocation_test)
