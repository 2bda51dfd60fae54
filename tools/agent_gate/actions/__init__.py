"""What Bazel runs: the double run of a property, the seal action, the evaluator. They need
neither pyyaml nor git.
"""
