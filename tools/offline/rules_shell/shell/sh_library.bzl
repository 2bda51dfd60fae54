"""Stand-in for @rules_shell//shell:sh_library.bzl on Bazel 4.2.3: the native rule."""

sh_library = native.sh_library
