"""The one JSON reader of every input surface (``domain.json_input``)."""

from __future__ import annotations

import pytest

from citadel.domain.errors import InvalidValue
from citadel.domain.json_input import loads_strict


def test_standard_json_reads_as_usual() -> None:
    assert loads_strict(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b'{"o": {"b": 1, "b": 1}}', "duplicate key 'b'"),
        (b'{"a": NaN}', "NaN is not JSON"),
        (b'{"a": -Infinity}', "-Infinity is not JSON"),
        (b'{"a": 1e999}', "too large"),
        (b'{"a": 1' + b"0" * 5000 + b"}", "5001 digits"),
        (b'{"a": ', "not valid JSON"),
        (b"\xff", "not UTF-8"),
        (b"[" * 100_000, "not valid JSON"),
    ],
)
def test_what_two_readers_could_take_differently_is_refused(raw: bytes, needle: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        loads_strict(raw)
    assert needle in str(caught.value)
