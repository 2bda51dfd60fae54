"""Stand-in for @com_google_protobuf//bazel:proto_library.bzl: the native rule."""

proto_library = native.proto_library
