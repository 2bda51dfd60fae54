"""Subprocesses the CLI drives (Bazel, git worktrees) and the errors and progress of a
command.
"""
