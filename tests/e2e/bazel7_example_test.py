"""example_test on the Bazel 7.7.1 lane: every example case of tools/demo, bzlmod.

The same harness as tests/e2e/example_test.py, with tools/bazel7 as Bazel: the
copy of examples/monorepo is built from its MODULE.bazel (local_path_override
pointed at this checkout), with the defaults Bazel 8 and 9 flipped
(tools/bazel7.bazelrc). Every case reaches its expected decision; the gate's
mechanics (cache by run id, the rc file of a long path list, no report on a
build failure, update_seal, a plain `bazel test //...`) hold there too. One
warm server and output base for every case.

Needs root and the sid root (tools/bootstrap_bazel7).
Run: .venv/bin/python3 tests/e2e/bazel7_example_test.py
"""

import lane

lane.use_bazel7()

from absl.testing import absltest  # noqa: E402

# unittest runs example_test's setUpModule and tearDownModule around them.
from example_test import DecisionTableTest, GateMechanicsTest  # noqa: E402, F401

if __name__ == "__main__":
    absltest.main()
