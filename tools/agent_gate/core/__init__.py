"""The decision: localities, run outcomes and the quorum evaluator. Pure, no I/O."""
