"""The gate's flags: the digest that travels with the paths, refusals, rc file words."""

from absl.testing import absltest

from agent_gate.core import pathdigest
from agent_gate.drive import gate_flags


class GateFlagsTest(absltest.TestCase):
    def test_the_digest_of_the_exact_paths_travels_with_them(self):
        paths = ["a,b", "c%d", " e "]
        flags = gate_flags.gate_flags(changed_paths=paths, run_id="r", flag_prefix="//:")
        digest = pathdigest.changed_paths_digest(paths)
        self.assertIn(f"--//:changed_paths_sha256={digest}", flags)

    def test_names_a_flag_cannot_carry_are_refused(self):
        for path in ("a\nb", "a\rb", "a\0b", "caf\udce9", ""):
            with self.subTest(path=path), self.assertRaises(gate_flags.GateInputError):
                gate_flags.gate_flags(changed_paths=[path], run_id="r")

    def test_rc_words_escape_what_the_tokenizer_reads(self):
        self.assertEqual(gate_flags._rc_quote("--x=a b"), "--x=a\\ b")
        self.assertEqual(gate_flags._rc_quote("x\\'#\""), "x\\\\\\'\\#\\\"")
        self.assertEqual(gate_flags._rc_quote("é"), "é")
        self.assertTrue(gate_flags._rc_line("test", "x\\\\").endswith(" #"))
        with self.assertRaises(gate_flags.GateInputError):
            gate_flags._rc_quote("a\nb")


if __name__ == "__main__":
    absltest.main()
