#!/usr/bin/env bash
set -euo pipefail
out=$("$TEST_SRCDIR/consumer/read_ledger")
expected="open counter.monotonic_under_replay budget=30"
if [[ $out != "$expected" ]]; then
  echo "expected: $expected" >&2
  echo "got:      $out" >&2
  exit 1
fi
