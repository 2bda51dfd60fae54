#!/usr/bin/env bash
# Passes only with the `args` and `env` of :needs_args_test, expanded as
# `bazel test` expands them; says what was missing otherwise.
# The invocation, for the test to compare with what `bazel test` itself gave.
echo "invoked with: $* | EXPECTED=$EXPECTED GREETING=$GREETING TZ=$TZ"
fail() { echo "check: $*" >&2; exit 1; }
[[ $# -eq 7 ]] || fail "want 7 arguments, got $#: $*"
[[ $(cat "$1") == "expected data" ]] || fail "argument 1 ($1) is not the data file's runfiles path"
[[ $1 == needs/data/expected.txt ]] || fail "argument 1 is $1"
[[ $(cat "$2") == "generated data" ]] || fail "argument 2 ($2) is not the generated file's runfiles path"
[[ $3 == "two words" ]] || fail "argument 3 is not split as a shell would: $3"
[[ $4 == bazel-out/*/bin/needs/generated.txt ]] || fail "argument 4 is not an exec path: $4"
[[ $5 == "$2" ]] || fail "argument 5 ($5) is not \$(locations) of the generated file"
[[ $6 == mode=fastbuild || $6 == mode=opt || $6 == mode=dbg ]] || fail "argument 6 is $6"
[[ $7 == '$LITERAL' ]] || fail "argument 7 is $7"
[[ $(cat "$EXPECTED") == "expected data" ]] || fail "EXPECTED=$EXPECTED"
[[ $GREETING == "hello 'world'" ]] || fail "GREETING=$GREETING"
[[ $TZ == Europe/Paris ]] || fail "TZ=$TZ"
echo "check: every argument and variable as bazel test gives them"
