"""The runner's hand-printed RunResult text is the message protobuf parses back."""

import math
import string
from pathlib import Path

from absl.testing import absltest
from google.protobuf import text_format
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_gate.actions import runner
from agent_gate.formats import run_result
from proto import agent_gate_pb2

_SINT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
_SECONDS = st.floats(min_value=0, allow_nan=False) | st.sampled_from([math.inf, 0.1, 1e-7])
# Any text, including quotes, backslashes, control and non-ASCII characters.
_TEXT = st.text() | st.text(alphabet=string.printable + '"\\\x00\x7f\u00e9\u4e2d\U0001f600')


def _runs(number: int) -> st.SearchStrategy[runner.Run]:
    return st.builds(
        runner.Run,
        run_number=st.just(number),
        exit_code=_SINT32,
        timed_out=st.booleans(),
        duration_seconds=_SECONDS,
        output_sha256=_TEXT,
        fixture_seal_before=_TEXT,
        fixture_seal_after=_TEXT,
        isolated=st.booleans(),
        isolation_error=_TEXT,
    )


_DOUBLE_RUNS = st.builds(
    runner.DoubleRun,
    spec=st.builds(
        runner.RunSpec,
        property_id=_TEXT,
        label=_TEXT,
        executable=st.just(Path("/p")),
        workspace=st.just("ws"),
        timeout_seconds=_SECONDS,
        run_id=_TEXT,
    ),
    runs=st.tuples(_runs(1), _runs(2)),
    classification=st.sampled_from(["pass", "fail", "flake"]) | _TEXT,
    network_blocked=st.booleans(),
    network_interfaces=st.lists(_TEXT, max_size=4).map(tuple),
)


def _expected(double_run: runner.DoubleRun) -> agent_gate_pb2.RunResult:
    """The message built through protobuf itself, field by field."""
    spec = double_run.spec
    return agent_gate_pb2.RunResult(
        property_id=spec.property_id,
        label=spec.label,
        run_id=spec.run_id,
        timeout_seconds=spec.timeout_seconds,
        runs=[
            agent_gate_pb2.Run(
                run_number=run.run_number,
                exit_code=run.exit_code,
                timed_out=run.timed_out,
                duration_seconds=run.duration_seconds,
                output_sha256=run.output_sha256,
                fixture_seal_before=run.fixture_seal_before,
                fixture_seal_after=run.fixture_seal_after,
                isolated=run.isolated,
                isolation_error=run.isolation_error,
            )
            for run in double_run.runs
        ],
        classification=double_run.classification,
        network_blocked=double_run.network_blocked,
        network_interfaces=double_run.network_interfaces,
    )


class RunResultTest(absltest.TestCase):
    @settings(max_examples=2000, deadline=None)
    @given(_DOUBLE_RUNS)
    def test_text_parses_to_the_same_message(self, double_run):
        parsed = text_format.Parse(run_result.to_text(double_run), agent_gate_pb2.RunResult())
        self.assertEqual(parsed, _expected(double_run))

    def test_a_typical_result_reads_like_protobufs_own_text(self):
        spec = runner.RunSpec("p.id", "//:p", Path("/p"), "ws", 300.0, run_id="r1")
        runs = (
            runner.Run(1, exit_code=0, duration_seconds=0.21, output_sha256="ab" * 32),
            runner.Run(2, exit_code=-9, timed_out=True, duration_seconds=300.0),
        )
        double_run = runner.DoubleRun(spec, runs, "flake")
        ours = text_format.Parse(run_result.to_text(double_run), agent_gate_pb2.RunResult())
        self.assertEqual(
            text_format.MessageToString(ours), text_format.MessageToString(_expected(double_run))
        )
        self.assertEqual([run.exit_code for run in ours.runs], [0, -9])
        self.assertEqual(ours.classification, "flake")

    def test_a_real_double_run_is_trusted_only_when_isolated_and_offline(self):
        spec = runner.RunSpec("p", "//:p", Path("/p"), "ws", 1.0)
        runs = (runner.Run(1, isolated=True), runner.Run(2, isolated=True))
        for blocked, interfaces, trusted in ((True, ("lo",), True), (False, ("eth0", "lo"), False)):
            double_run = runner.DoubleRun(spec, runs, "pass", blocked, interfaces)
            parsed = text_format.Parse(run_result.to_text(double_run), agent_gate_pb2.RunResult())
            self.assertEqual(run_result.untrusted(parsed) is None, trusted)
        alone = (runner.Run(1, isolated=True), runner.Run(2, isolation_error="no userns"))
        parsed = text_format.Parse(
            run_result.to_text(runner.DoubleRun(spec, alone, "pass", True, ("lo",))),
            agent_gate_pb2.RunResult(),
        )
        self.assertIn(
            "run 2 could not be isolated from the other run (no userns)",
            run_result.untrusted(parsed) or "",
        )

    def test_lone_surrogates_survive_as_their_escape(self):
        # An undecodable file name in a seal error arrives as a lone surrogate.
        spec = runner.RunSpec("p", "//:p", Path("/p"), "ws", 1.0)
        run = runner.Run(1, fixture_seal_before="error: /f/\udcff")
        text = run_result.to_text(runner.DoubleRun(spec, (run, runner.Run(2)), "pass"))
        parsed = text_format.Parse(text, agent_gate_pb2.RunResult())
        self.assertEqual(parsed.runs[0].fixture_seal_before, "error: /f/\\udcff")


if __name__ == "__main__":
    absltest.main()
