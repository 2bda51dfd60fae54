"""Public API of agent_gate.

```starlark
load("@agent_gate//rules:defs.bzl", "agent_gate", "sealed_fixtures", "strong_property", "weak_property")

sealed_fixtures(name = "responses", seal = "responses.seal")

strong_property(
    name = "resp.no_secret_fields",
    test = "//api:no_secret_fields_test",
    locality = ["api/handlers", "api/serializers"],
    fixtures = ["//fixtures/responses"],
)

agent_gate(
    name = "agent_gate",
    properties = [":resp.no_secret_fields"],
    ledger = "ledger.txtpb",
)
```
"""

load("//rules:providers.bzl", _AgentGateInfo = "AgentGateInfo", _PropertyInfo = "PropertyInfo", _SealedFixturesInfo = "SealedFixturesInfo")
load(
    "//rules/private:macros.bzl",
    _agent_gate = "agent_gate",
    _full_strong_pass = "full_strong_pass",
    _sealed_fixtures = "sealed_fixtures",
    _strong_property = "strong_property",
    _weak_property = "weak_property",
)

agent_gate = _agent_gate
full_strong_pass = _full_strong_pass
sealed_fixtures = _sealed_fixtures
strong_property = _strong_property
weak_property = _weak_property
AgentGateInfo = _AgentGateInfo
PropertyInfo = _PropertyInfo
SealedFixturesInfo = _SealedFixturesInfo
