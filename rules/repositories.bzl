"""Dependencies of agent_gate for WORKSPACE users (Bazel 4.2.3, offline).

```starlark
load("@agent_gate//rules:repositories.bzl", "agent_gate_dependencies")

agent_gate_dependencies()
```

Bazel >= 7 users need none of this: `bazel_dep(name = "agent_gate")` in MODULE.bazel.
"""

load(
    "//rules/private:repositories.bzl",
    "debian_repository",
    "offline_repository",
    "pypi_hub",
    "python_environment",
)

def _maybe(rule, name, **kwargs):
    if name not in native.existing_rules():
        rule(name = name, **kwargs)

# buildifier: disable=unnamed-macro
def agent_gate_dependencies(register_python_toolchain = True):
    """Declares every repository agent_gate and Bazel 4.2.3 need, served offline.

    A repository the WORKSPACE already declared under the same name is kept.
    agent_gate's own Python environment (`tools/bootstrap` creates it;
    `AGENT_GATE_PYTHON` overrides it) supplies the packages of `@pypi`, which
    agent_gate's tools carry in their runfiles, and `protoc`.

    Args:
      register_python_toolchain: also register that environment's interpreter as
        the workspace's Python toolchain, so every `py_test` runs on it and sees
        its packages. False keeps the workspace's own toolchain (or Bazel's
        autodetected `python3`); agent_gate's tools then run on that interpreter
        with their packages from `@pypi`. See docs/offline.md.
    """
    _maybe(offline_repository, "remote_coverage_tools", marker = Label("//tools:offline/remote_coverage_tools/WORKSPACE.offline"))
    _maybe(offline_repository, "rules_cc", marker = Label("//tools:offline/rules_cc/WORKSPACE.offline"))
    _maybe(offline_repository, "rules_python", marker = Label("//tools:offline/rules_python/WORKSPACE.offline"))
    _maybe(offline_repository, "rules_shell", marker = Label("//tools:offline/rules_shell/WORKSPACE.offline"))
    _maybe(offline_repository, "com_google_protobuf", marker = Label("//tools:offline/com_google_protobuf/WORKSPACE.offline"))
    _maybe(debian_repository, "rules_java", package = "bazel-rules-java", path = "/usr/share/bazel/rules/java")

    # rules/BUILD.bazel declares the public .bzl files as skylib's bzl_library.
    _maybe(debian_repository, "bazel_skylib", package = "bazel-skylib", path = "/usr/share/bazel/tools/skylib")
    _maybe(python_environment, "agent_gate_python")

    # agent_gate's BUILD files say `@pypi`; a workspace with a `@pypi` of its own
    # maps agent_gate's to `@agent_gate_pypi` (repo_mapping, docs/offline.md).
    _maybe(pypi_hub, "agent_gate_pypi", requirements = Label("//tools:requirements.in"))
    _maybe(pypi_hub, "pypi", requirements = Label("//tools:requirements.in"))
    if register_python_toolchain:
        native.register_toolchains("@agent_gate_python//:toolchain")

# buildifier: disable=unnamed-macro
def agent_gate_dev_dependencies():
    """What only agent_gate's own tests need: the toolchain of skylib's unittest and analysistest.

    Call it after `agent_gate_dependencies()`, which declares `@bazel_skylib`.
    """
    native.register_toolchains("@bazel_skylib//toolchains/unittest:all")
