from absl.testing import absltest

from proto import agent_gate_pb2


class ProtoImportTest(absltest.TestCase):
    def test_ledger_message(self):
        ledger = agent_gate_pb2.Ledger()
        ledger.freeze.add(property_id="x", state="open")
        self.assertEqual(ledger.freeze[0].state, "open")


if __name__ == "__main__":
    absltest.main()
