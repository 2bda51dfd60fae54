"""Stand-in for @rules_shell//shell:sh_binary.bzl on Bazel 4.2.3: the native rule."""

sh_binary = native.sh_binary
