"""The JSON-lines reader every evaluation set is read with (QA, unanswerable, pairs).

One object per line; blank lines are skipped; a line that is not JSON, or not an
object, is refused with its number. What each object must hold is its loader's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from citadel.app.errors import InvalidRequest


def json_objects(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, object]]]:
    """(line number, object) for each non-blank line, numbered from 1."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(f"line {number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InvalidRequest(f"line {number}: not a JSON object")
        yield number, row
