"""rc_roundtrip_test on the Bazel 7.7.1 lane: Bazel 7's rc reader keeps every byte too.

The same harness as tests/e2e/rc_roundtrip_test.py, with tools/bazel7 as Bazel
(bzlmod, the defaults Bazel 8 and 9 flipped): the flags `bazel.write_rc_file`
writes for a path list past 64 KiB reach the rule byte for byte, crafted
values, random ones and the gate's `changed_paths` encoding. Bazel 7 reads the
lane's own rc file (tools/bazel7.bazelrc) before this one.

Needs root and the sid root (tools/bootstrap_bazel7).
Run: .venv/bin/python3 tests/e2e/bazel7_rc_roundtrip_test.py
"""

import lane

lane.use_bazel7()

from absl.testing import absltest  # noqa: E402
from rc_roundtrip_test import RcRoundTripTest  # noqa: E402, F401

if __name__ == "__main__":
    absltest.main()
