"""Stand-in for @rules_shell//shell:sh_test.bzl on Bazel 4.2.3: the native rule."""

sh_test = native.sh_test
