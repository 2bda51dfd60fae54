"""Which Bazel an end-to-end harness drives: the 4.2.3 lane, or the 7.7.1 one.

The harnesses (example_test, cli_test, adversarial_test, rc_roundtrip_test) run
on Debian's Bazel 4.2.3 by default. A `bazel7_*_test.py` file calls `use_bazel7`
before it imports one: from then on every Bazel the harness and the CLI start is
tools/bazel7 (Bazel 7.7.1 with bzlmod and, from tools/bazel7.bazelrc, the
defaults Bazel 8 and 9 flipped), named in AGENT_GATE_BAZEL, which the CLI trusts
as given. One implementation of each test, run on both lanes.
"""

from __future__ import annotations

import os
import unittest
from collections.abc import Mapping, Sequence

from bazel7_workspace import BAZEL7

# agent_gate.bazel.BAZEL_ENV, spelled out: this module is imported before sys.path has tools/.
BAZEL_ENV = "AGENT_GATE_BAZEL"


def use_bazel7() -> None:
    """Make tools/bazel7 the Bazel of this process and of everything it starts."""
    os.environ[BAZEL_ENV] = str(BAZEL7)


def is_bazel7() -> bool:
    return os.environ.get(BAZEL_ENV) == str(BAZEL7)


def name() -> str:
    return "bazel 7.7.1" if is_bazel7() else "bazel 4.2.3"


def suite(
    loader: unittest.TestLoader, chosen: Mapping[type[unittest.TestCase], Sequence[str]]
) -> unittest.TestSuite:
    """The named tests of each harness class, for a lane that runs only some of them.

    A name the class no longer has is an error, so a renamed test cannot drop
    out of the lane unnoticed.
    """
    tests = unittest.TestSuite()
    for case, names in chosen.items():
        known = set(loader.getTestCaseNames(case))
        missing = [test for test in names if test not in known]
        if missing:
            raise LookupError(f"{case.__name__} has no tests {missing}")
        tests.addTests(case(test) for test in names)
    return tests
