#!/bin/sh
# The sid root's protoc (python3-grpc-tools).
exec /usr/bin/python3 -m grpc_tools.protoc "$@"
