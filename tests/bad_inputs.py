"""One table of bad inputs that every input surface must refuse (HTTP, MCP, gRPC, shadow).

Each case is a defect of one object holding an integer field: the field's
value as JSON text, and what follows it. A surface renders the case into its
own object (a search request's ``limit``, a shadow citation's ``version``)
with ``BadInput.text`` and checks that it is refused with its own error form:
HTTP 422, an MCP tool error (or a JSON-RPC parse error for text no parsed
value can carry), gRPC ``INVALID_ARGUMENT``, a shadow ``BadRecord``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class BadInput:
    id: str
    value: str
    """The integer field's value, as JSON text."""
    after: str = ""
    """JSON members after the field; ``{field}`` stands for its name."""
    needle: str = "{field}"
    """What the refusal's message must contain (``{field}``: the field's name)."""

    def text(self, head: str, field: str, tail: str = "") -> str:
        """The JSON text of the case: ``head`` is the object's text before the field
        (``{"query": "q"``), ``tail`` what closes its containers."""
        after = self.after.format(field=field)
        return f'{head}, "{field}": {self.value}{after}}}{tail}'

    def parsed(self, head: str, field: str, tail: str = "") -> Any:
        """The case as a parsed value, or None when only JSON text can carry it (a
        duplicate key, an integer literal Python will not convert)."""
        if not self.parsed_form:
            return None
        return json.loads(self.text(head, field, tail))

    @property
    def parsed_form(self) -> bool:
        return self.id not in {"duplicate key", "over-long integer literal"}

    def expected(self, field: str) -> str:
        return self.needle.format(field=field)


BAD_INPUTS = (
    BadInput("unknown field", "5", ', "colour": "red"', needle="colour"),
    BadInput("duplicate key", "5", ', "{field}": 6', needle="duplicate key"),
    BadInput("true for an integer", "true"),
    BadInput("text for an integer", '"5"'),
    BadInput("float for an integer", "5.0"),
    BadInput("exponent for an integer", "5e0"),
    BadInput("below the range", "0"),
    BadInput("past int64", "9223372036854775808"),
    BadInput("over-long integer literal", "1" + "0" * 5000, needle="5001 digits"),
)
IDS = [case.id for case in BAD_INPUTS]
