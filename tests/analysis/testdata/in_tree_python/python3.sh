#!/bin/sh
exec python3 "$@"
