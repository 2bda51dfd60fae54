"""The `agent-gate` commands: score, freeze, admit, catalog, seal."""
