"""protobuf's `proto_library`: on Bazel 7 it is the native rule."""

proto_library = native.proto_library
