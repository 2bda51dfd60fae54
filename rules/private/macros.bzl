"""Macros behind the public API: defaults a BUILD file should not have to spell."""

load(":gate.bzl", "agent_gate_test", "full_strong_pass_test")
load(":property.bzl", "strong_property_test", "test_timeout_seconds", "weak_property_test")
load(":sealed_fixtures.bzl", "seal_updater", "sealed_fixtures_rule")

def sealed_fixtures(name, seal = None, srcs = None, root = None, **kwargs):
    """A fixture tree plus its committed seal; `bazel run :NAME.update_seal` rewrites the seal.

    Args:
      name: target name.
      seal: the committed seal file; default `NAME.seal`.
      srcs: the tree's files; default every file under the tree (seal files excluded).
      root: the tree's directory relative to this package; default the package itself.
      **kwargs: common attributes (visibility, tags, ...).
    """
    if seal == None:
        seal = name + ".seal"
    if srcs == None:
        pattern = (root.rstrip("/") + "/**") if root else "**"

        # An empty tree is legal (its seal is the empty pipeline's); Bazel 8 refuses empty globs.
        srcs = native.glob([pattern], exclude = ["**/*.seal"], allow_empty = True)
    sealed_fixtures_rule(name = name, seal = seal, srcs = srcs, root = root or "", **kwargs)
    seal_updater(
        name = name + ".update_seal",
        fixtures = ":" + name,
        tags = ["manual"],
        visibility = kwargs.get("visibility"),
        testonly = kwargs.get("testonly"),
    )

def _tagged(tags, wanted):
    tags = list(tags or [])
    for tag in wanted:
        if tag not in tags:
            tags.append(tag)
    return tags

def _manual(tags):
    """`manual`: no diff under `bazel test //...`; `external`: a verdict is never served from a cache."""
    return _tagged(tags, ["manual", "external"])

def agent_gate(name, properties, ledger, debt_cap = 5, unobserved_ok = [], tags = None, **kwargs):
    """The merge-queue gate test. Only `promote` is a green `bazel test`.

    Tagged `manual`: a plain `bazel test //...` has no diff and never runs it;
    the merge queue names it, with `--@agent_gate//:changed_paths=...`.

    Args:
      name: target name, usually `agent_gate`.
      properties: the catalog, `strong_property`/`weak_property` targets.
      ledger: the freeze ledger file (`ledger.txtpb`).
      debt_cap: open freezes (plus spent ones) above this stop the queue.
      unobserved_ok: repo-relative prefixes a patch may touch with no strong property
        observing them (e.g. `docs`); any other unobserved touched path is review, and
        so is one at or below a package of a property's test closure, and any BUILD file.
      tags: extra tags; `manual` and `external` are always added.
      **kwargs: `rule_set_paths`, `size`, `timeout`, `visibility`, ...
    """
    agent_gate_test(
        name = name,
        properties = properties,
        ledger = ledger,
        debt_cap = debt_cap,
        unobserved_ok = unobserved_ok,
        tags = _manual(tags),
        **kwargs
    )

def full_strong_pass(name, gate, tags = None, **kwargs):
    """Every strong property of `gate` twice, regardless of locality: the scheduled full pass.

    Green only when every strong property that is not frozen passed twice. It is
    the gate's own decision table, catalog, ledger and debt cap, with no diff.

    Args:
      name: target name.
      gate: the `agent_gate` target whose catalog (weak properties are not run),
        ledger and debt cap the pass uses.
      tags: extra tags; `manual` and `external` are always added.
      **kwargs: common test attributes (`size`, `timeout`, `visibility`, ...).
    """
    full_strong_pass_test(
        name = name,
        gate = gate,
        tags = _manual(tags),
        **kwargs
    )

def _declared_here(test):
    """The wrapped test's attributes if this package declared it already, else None."""
    if type(test) != "string" or test.startswith("@"):
        return None
    if test.startswith("//"):
        package, _, name = test[2:].partition(":")
        if package != native.package_name():
            return None
        name = name or package.rpartition("/")[2]
    else:
        name = test[1:] if test.startswith(":") else test
    return native.existing_rule(name)

def _predicate_attributes(test):
    """How the property learns the wrapped test's `srcs`, `args`, `env` and timeout.

    From the test's declaration when this package made it before the property, with
    plain values and no `args`, `env` or `env_inherit`; otherwise (another package,
    declared later, an `alias`, `select()`, a test with `args` or `env`, which are
    expanded against the test's own dependencies) the rule's aspect reads them at
    analysis, which costs more. Both attributes are always set here, so a BUILD file
    cannot hand the rule other values.
    """
    aspect_reads_them = {"predicate_srcs": [], "predicate_test": test}
    declared = _declared_here(test)

    # Only a test rule's own `srcs` are its predicate: an `alias` (which the aspect
    # sees through) or any other kind is left to the aspect.
    if declared == None or not declared.get("kind", "").endswith("_test"):
        return aspect_reads_them
    attributes = dict(aspect_reads_them)
    seconds = test_timeout_seconds(declared.get("timeout"), declared.get("size"))
    if seconds != None:
        attributes["timeout_seconds"] = seconds
    srcs = declared.get("srcs") or []
    if (type(srcs) not in ("list", "tuple") or [src for src in srcs if type(src) != "string"] or
        declared.get("args") or declared.get("env") or declared.get("env_inherit")):
        return attributes
    attributes.update({"predicate_srcs": list(srcs), "predicate_test": None})
    return attributes

def _wrap(test, kwargs):
    """Fills `kwargs` with what a property takes from the test it wraps.

    A timeout the BUILD file gives wins over the test's own. Properties are tagged
    `manual`: `bazel test //...` runs each wrapped test once, as itself, not a
    second time as its property; the gate runs the property.
    """
    attributes = _predicate_attributes(test)
    if "timeout_seconds" in kwargs:
        attributes.pop("timeout_seconds", None)
        attributes["timeout_set"] = True
    kwargs.update(attributes)
    kwargs["tags"] = _tagged(kwargs.get("tags"), ["manual"])

def strong_property(name, test, locality, fixtures = [], id = None, **kwargs):
    """A strong property: an invariant the patch can break. It votes.

    The target is itself a test: `bazel test` on it runs the wrapped test.

    Args:
      name: target name; also the catalog id unless `id` is given.
      test: the test target that is the predicate (`py_test`, `sh_test`, ...).
      locality: repo-relative path prefixes the property observes, per path component.
      fixtures: `sealed_fixtures` targets the property reads.
      id: catalog id; default `name`.
      **kwargs: `admission_mutants` (`.patch`/`.diff` files that each delete the
        invariant; `agent-gate admit --all-declared` checks the property fails twice
        with each), `timeout_seconds` (per run of the double run), common test attributes.
    """
    _wrap(test, kwargs)
    strong_property_test(name = name, test = test, locality = locality, fixtures = fixtures, id = id or name, **kwargs)

def weak_property(name, test, locality, fixtures = [], id = None, **kwargs):
    """A weak property: a shape check. It can reject a patch, never fill a strong gap.

    Args:
      name: target name; also the catalog id unless `id` is given.
      test: the test target that is the predicate.
      locality: repo-relative path prefixes the property observes, per path component.
      fixtures: `sealed_fixtures` targets the property reads.
      id: catalog id; default `name`.
      **kwargs: `timeout_seconds` (per run of the double run), common test attributes.
    """
    _wrap(test, kwargs)
    weak_property_test(name = name, test = test, locality = locality, fixtures = fixtures, id = id or name, **kwargs)
