"""agent_gate's Python tool, in layers (docs/architecture.md).

core (the decision) <- formats (the files) <- actions (what Bazel runs) and drive
(Bazel, git) <- cli (the commands); //tests/unit:layers_test keeps the order.
"""
