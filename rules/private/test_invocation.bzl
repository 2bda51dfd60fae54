"""How `bazel test` invokes a test: its `args` and `env` expanded, as the gate's runs must.

Bazel expands a test's `args` and `env` values with `$(location)`-style functions
(resolved against the test's own dependencies, `location` meaning the runfiles
path) and Make variables, `$$` standing for `$`; then it splits each `args` item
into words the way a Bourne shell would (quotes and backslashes, blanks are space
and tab). `env` values are not split. docs/rules.md says what a property refuses.
"""

# Location functions Bazel expands in a test's `args` and `env`, and the
# `ctx.expand_location` function giving the same path: for a test, `location` is
# the runfiles path (`rootpath`), not the exec path.
LOCATION_FUNCTIONS = {
    "location": "rootpath",
    "locations": "rootpaths",
    "rootpath": "rootpath",
    "rootpaths": "rootpaths",
    "execpath": "execpath",
    "execpaths": "execpaths",
    "rlocationpath": "rlocationpath",
    "rlocationpaths": "rlocationpaths",
}

def expand_template(text, locator, variables):
    """`text` with `$$`, `$(FUNCTION label)` and `$(VARIABLE)` expanded.

    Args:
      text: an `args` item or `env` value as the BUILD file wrote it.
      locator: struct(expand_location, targets): `expand_location(text, targets)` expands
        one `$(rootpath ...)`-style call (`ctx.expand_location` in the test's aspect).
      variables: the Make variables (`ctx.var`).

    Returns:
      struct(value, error): `error` is "" or names what Bazel would not expand the
      same way, and then `value` is None.
    """
    pieces = []
    index = 0
    length = len(text)

    # Starlark has no `while`: every step consumes at least one character.
    for _ in range(length + 1):
        if index >= length:
            break
        dollar = text.find("$", index)
        if dollar < 0:
            pieces.append(text[index:])
            break
        pieces.append(text[index:dollar])
        after = text[dollar + 1:dollar + 2]
        if after == "$":
            pieces.append("$")
            index = dollar + 2
            continue
        if after != "(":
            return struct(value = None, error = "%r: a `$` must start `$(...)` or be written `$$`" % text)
        close = text.find(")", dollar)
        if close < 0:
            return struct(value = None, error = "%r: unterminated `$(`" % text)
        inner = text[dollar + 2:close]
        name, space, parameter = inner.partition(" ")
        if space:
            function = LOCATION_FUNCTIONS.get(name)
            if function == None:
                return struct(value = None, error = "%r: unknown function `$(%s ...)`" % (text, name))
            pieces.append(locator.expand_location("$(%s %s)" % (function, parameter.strip()), locator.targets))
        else:
            value = variables.get(name)
            if value == None:
                return struct(value = None, error = "%r: unknown Make variable `$(%s)`" % (text, name))
            if "$" in value:
                return struct(value = None, error = "%r: Make variable `$(%s)` expands to another template" % (text, name))
            pieces.append(value)
        index = close + 1
    return struct(value = "".join(pieces), error = "")

def tokenize(text):
    """`text` split into words as Bazel splits a test's `args` item.

    Args:
      text: one expanded `args` item.

    Returns:
      struct(words, error): `error` is "" or says why the text cannot be split
      (then `words` is None).
    """
    words = []
    word = []
    forced = False  # a quoted empty string is still a word
    quote = ""
    escaped = False
    for character in text.elems():
        if escaped:
            # Inside double quotes a backslash only escapes `\` and `"`.
            if quote == "\"" and character not in ("\\", "\""):
                word.append("\\")
            word.append(character)
            escaped = False
        elif quote:
            if character == quote:
                quote = ""
            elif character == "\\" and quote == "\"":
                escaped = True
            else:
                word.append(character)
        elif character in ("'", "\""):
            quote = character
            forced = True
        elif character in (" ", "\t"):
            if forced or word:
                words.append("".join(word))
            word = []
            forced = False
        elif character == "\\":
            escaped = True
        else:
            word.append(character)
    if escaped:
        return struct(words = None, error = "%r: backslash at end of string" % text)
    if quote:
        return struct(words = None, error = "%r: unterminated quotation" % text)
    if forced or word:
        words.append("".join(word))
    return struct(words = words, error = "")

# Variables the gate's runner sets for every run, over the test's `env` (the test
# protocol and each run's private scratch, tools/agent_gate/actions/runner.py): a test's
# `env` naming one would not get its value, so it is refused.
RUNNER_OWNED_ENV = [
    "JAVA_RUNFILES",
    "PYTHON_RUNFILES",
    "RUNFILES_DIR",
    "TEST_PREMATURE_EXIT_FILE",
    "TEST_RUN_NUMBER",
    "TEST_SRCDIR",
    "TEST_TARGET",
    "TEST_TIMEOUT",
    "TEST_TMPDIR",
    "TEST_UNDECLARED_OUTPUTS_ANNOTATIONS_DIR",
    "TEST_UNDECLARED_OUTPUTS_DIR",
    "TEST_WARNINGS_OUTPUT_FILE",
    "TEST_WORKSPACE",
    "TMPDIR",
    "XML_OUTPUT_FILE",
]

def invocation(args, env, env_inherit, locator, variables):
    """The test's command-line words and environment, as `bazel test` gives them.

    Args:
      args: the test's `args` attribute.
      env: the test's `env` attribute.
      env_inherit: the test's `env_inherit` attribute.
      locator: as for `expand_template`.
      variables: the Make variables (`ctx.var`).

    Returns:
      struct(args, env, refusals): `refusals` lists what a property cannot
      reproduce, each naming the attribute and the value.
    """
    refusals = []
    words = []
    for item in args:
        expanded = expand_template(item, locator, variables)
        if expanded.error:
            refusals.append("`args` item " + expanded.error)
            continue
        split = tokenize(expanded.value)
        if split.error:
            refusals.append("`args` item " + split.error)
            continue
        words.extend(split.words)
    environment = {}
    for key in sorted(env):
        if key in RUNNER_OWNED_ENV:
            refusals.append("`env` key %r (the gate's runner sets it for each run)" % key)
            continue
        expanded = expand_template(env[key], locator, variables)
        if expanded.error:
            refusals.append("`env` value of %r: %s" % (key, expanded.error))
            continue
        environment[key] = expanded.value
    if env_inherit:
        refusals.append("`env_inherit` %r (a run never sees the caller's environment)" % list(env_inherit))
    return struct(args = words, env = environment, refusals = refusals)
