"""How one patch's inputs reach the gate: its build settings, spelled as flags.

The gate's inputs travel as the rule set's build settings
(`--@agent_gate//:changed_paths`, `run_id`, `commit_counts`, `override_by`,
`override_ignore`, `only_properties`), spelled `--//:NAME` inside agent_gate's
own workspace (`flag_prefix`). A long changed-path list does not fit in one
command-line argument (Linux caps a single argv string at 128 KiB), so past a
threshold the flags go into a temporary rc file passed as `bazel
--bazelrc=<file> test ...`; that file first imports the rc file `--bazelrc`
would otherwise have replaced (`~/.bazelrc`, or the caller's own `--bazelrc`),
so nothing the user configured is lost. The workspace's own `.bazelrc` is read
either way. Every special byte of an rc word is backslash-escaped (Bazel's rc
tokenizer honours no quotes), and `changed_paths_sha256` carries the digest of
the exact list, which the report must echo. Nothing here runs a process.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from agent_gate.core import pathdigest
from agent_gate.core.quorum import Override

FLAG_PREFIX = "@agent_gate//:"
# Above this many bytes of gate flags, they go into an rc file instead of argv.
ARGV_FLAG_BYTES = 64 * 1024
_AGENT_GATE_WORKSPACE = re.compile(r"""workspace\(\s*name\s*=\s*["']agent_gate["']""")


class GateInputError(ValueError):
    """An input the gate cannot be run on faithfully; the caller must fail closed."""


def flag_prefix(workspace: Path) -> str:
    """How the gate's flags are spelled in `workspace`.

    In a consumer they are `--@agent_gate//:NAME`; inside agent_gate's own workspace
    Bazel 4.2.3 only knows `--//:NAME` (see docs/offline.md).
    """
    for name in ("WORKSPACE.bazel", "WORKSPACE"):
        path = workspace / name
        if path.is_file() and _AGENT_GATE_WORKSPACE.search(path.read_text(errors="replace")):
            return "//:"
    return FLAG_PREFIX


def _check_value(what: str, value: str) -> None:
    for char, name in (("\n", "a newline"), ("\r", "a carriage return"), ("\0", "a NUL byte")):
        if char in value:
            raise GateInputError(f"{what} {value!r} contains {name}, which a flag cannot carry")


def _list_flag_item(what: str, item: str) -> str:
    """One item of a comma-separated flag, refused when the gate would read it differently."""
    _check_value(what, item)
    if not item:
        raise GateInputError(f"{what} is empty")
    if "," in item:
        raise GateInputError(
            f"{what} {item!r} contains ',', the separator of the flag; the gate would read "
            "it as several paths, so it cannot be scored automatically"
        )
    if item != item.strip():
        raise GateInputError(
            f"{what} {item!r} begins or ends with whitespace, which the gate strips; it "
            "cannot be scored automatically"
        )
    return item


def encode_path(path: str) -> str:
    """A changed path as one item of `changed_paths`: `%` and `,` percent-encoded.

    The rule decodes `%2C` and `%25` and keeps every other byte, so any file name
    git can produce (commas and edge spaces included) reaches the gate unchanged.
    """
    _check_value("changed path", path)
    if not path:
        raise GateInputError("changed path is empty")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise GateInputError(
            f"changed path {shown!r} is not UTF-8; Bazel's flags and the gate's config (JSON) "
            "cannot carry its bytes faithfully"
        ) from None
    return path.replace("%", "%25").replace(",", "%2C")


def gate_flags(
    *,
    changed_paths: Sequence[str],
    run_id: str,
    commit_counts: Mapping[str, int] | None = None,
    override: Override | None = None,
    flag_prefix: str = FLAG_PREFIX,
    only_properties: Sequence[str] = (),
) -> list[str]:
    """The build-setting flags that hand one candidate patch to the gate.

    `only_properties`: run just these of the matched properties (freeze, admit).
    """
    paths = [encode_path(path) for path in changed_paths]
    _check_value("run id", run_id)
    counts: list[str] = []
    for commit, count in (commit_counts or {}).items():
        _list_flag_item("commit", commit)
        if "=" in commit or any(char.isspace() for char in commit):
            raise GateInputError(f"commit {commit!r} is not a commit id")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise GateInputError(f"commit count of {commit} must be an integer >= 0, not {count!r}")
        counts.append(f"{commit}={count}")
    flags = [
        f"--{flag_prefix}changed_paths={','.join(paths)}",
        f"--{flag_prefix}changed_paths_sha256={pathdigest.changed_paths_digest(changed_paths)}",
        f"--{flag_prefix}run_id={run_id}",
        f"--{flag_prefix}commit_counts={','.join(counts)}",
    ]
    by, ignored = "", ""
    if override is not None:
        _check_value("override author", override.by)
        by = override.by
        ignored = ",".join(_list_flag_item("overridden ledger id", i) for i in override.ignored_ids)
    flags += [f"--{flag_prefix}override_by={by}", f"--{flag_prefix}override_ignore={ignored}"]
    if only_properties:
        only = ",".join(_list_flag_item("property id", item) for item in only_properties)
        flags.append(f"--{flag_prefix}only_properties={only}")
    return flags


def fits_command_line(flags: Sequence[str]) -> bool:
    """Whether flags are short enough for argv; longer ones go through an rc file."""
    return sum(len(flag.encode("utf-8", "surrogateescape")) for flag in flags) <= ARGV_FLAG_BYTES


# Bytes an rc line keeps literally without a backslash before them.
_RC_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-=%,:@+")


def _rc_quote(token: str) -> str:
    """One option as one word of a bazelrc line, whatever bytes it holds.

    Bazel's rc tokenizer (the client's blaze_util::Tokenize) takes a backslash as an
    escape everywhere, inside single quotes too, and `#` as a comment. So no quotes:
    every ASCII byte outside a safe set gets a backslash, which keeps it literally.
    Bytes above ASCII (UTF-8, or undecodable bytes kept as surrogates) are never
    special to it. A newline or NUL cannot be carried (`_check_value` refuses them).
    """
    _check_value("rc file option", token)
    return "".join(char if char in _RC_PLAIN or ord(char) > 0x7F else "\\" + char for char in token)


def split_bazelrc(startup_flags: Sequence[str]) -> tuple[list[str], str | None]:
    """Take a caller's `--bazelrc=X` out of the startup flags: our rc file imports it."""
    kept: list[str] = []
    user_rc: str | None = None
    flags = list(startup_flags)
    index = 0
    while index < len(flags):
        flag = flags[index]
        if flag.startswith("--bazelrc="):
            user_rc = flag.split("=", 1)[1]
        elif flag == "--bazelrc" and index + 1 < len(flags):
            user_rc = flags[index + 1]
            index += 1
        else:
            kept.append(flag)
        index += 1
    return kept, user_rc


def _rc_line(command: str, word: str) -> str:
    """One rc line; the closing `#` (an empty comment) keeps the word's last byte.

    The rc reader joins a line ending in a backslash with the next one, escaped or
    not, and strips trailing whitespace (an escaped space or form feed included)
    before it tokenizes: the comment ends every line with neither.
    """
    return f"{command} {word} #"


def write_rc_file(path: Path, flags: Sequence[str], user_rc: str | None) -> None:
    """An rc file with the gate flags under `test`, importing the rc it displaces."""
    lines = ["# agent_gate: the flags of one gate run (too long for the command line)."]
    if user_rc is not None:
        if user_rc != "/dev/null":
            lines.append(_rc_line("import", _rc_quote(user_rc)))
    else:
        home = os.environ.get("HOME")
        if home:
            lines.append(_rc_line("try-import", _rc_quote(str(Path(home) / ".bazelrc"))))
    lines.extend(_rc_line("test", _rc_quote(flag)) for flag in flags)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
