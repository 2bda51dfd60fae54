"""Prints the open freezes of the ledger: imports the generated module and runfiles."""

from google.protobuf import text_format
from runfiles import runfiles

from proto import agent_gate_pb2


def main() -> None:
    path = runfiles.Create().Rlocation("consumer/ledger.txtpb")
    with open(path, encoding="utf-8") as stream:
        ledger = text_format.Parse(stream.read(), agent_gate_pb2.Ledger())
    for row in ledger.freeze:
        if row.state == "open":
            print(f"open {row.property_id} budget={row.retire_by_commit_count}")


if __name__ == "__main__":
    main()
