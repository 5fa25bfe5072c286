"""One JSON value per line, safe for any reader that splits lines: SSE ``data`` lines,
the CLI's ``--json`` lines and the server's JSON logs all come from ``json_line``.

JSON escapes C0 controls in strings but lets every other character through raw, and
some of those end a line for common readers: U+2028 and U+2029 (JavaScript before
ES2019, editors), U+0085 NEL (Python's ``str.splitlines``, many "universal newline"
readers), and DEL with the C1 controls (terminals act on them). A passage of a book
may hold any of them; ``json_line`` writes each as a ``\\uXXXX`` escape, which every
JSON parser reads back to the same character. They can only occur inside strings
(JSON's syntax outside strings is ASCII), so the escape is always valid there.
"""

from __future__ import annotations

import json
from typing import Any

LINE_BREAKING = frozenset([*range(0x7F, 0xA0), 0x2028, 0x2029])
"""Characters JSON allows raw that a line-splitting or terminal reader may act on:
DEL, the C1 controls (U+0085 NEL among them), LINE and PARAGRAPH SEPARATOR."""

_ESCAPES = {code: f"\\u{code:04x}" for code in LINE_BREAKING}


def json_line(value: Any, *, compact: bool = False) -> str:
    """``value`` as JSON on exactly one line (no line break at the end); every character
    a reader could take for a line break or a control is escaped."""
    separators = (",", ":") if compact else None
    return json.dumps(value, ensure_ascii=False, separators=separators).translate(_ESCAPES)
