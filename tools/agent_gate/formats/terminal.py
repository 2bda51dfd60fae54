"""Text a terminal or a CI log viewer shows as it is: no controls from a patch.

File names, notes and messages the CLI prints carry what a patch chose. A name
holding an escape sequence could move the cursor and erase the decision line; a
bidirectional override could reorder it. `terminal_safe` escapes both.
"""

from __future__ import annotations

import re

# C0 controls but the tab, DEL, C1 controls, and the bidirectional overrides.
_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """`text` with every terminal control escaped (`\\x1b`, `\\u202e`)."""
    return _TERMINAL_CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
