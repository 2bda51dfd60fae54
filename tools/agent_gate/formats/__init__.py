"""The files agent_gate reads and writes: gate config, run result, ledger, report, seal,
patch. No subprocess, no Bazel, no git.
"""
