"""Quotable units cut at ingest and stored beside the chunk, and read back at answer time.

Cutting a passage into units (:mod:`.units`) is most of the extractive generator's own
work: about 0.1 ms a KiB of prose, for every passage of every answer it has not seen
before. Ingest cuts each chunk once and stores the units in this form
(``Chunk.units``); the generator reads them instead of cutting again. The form is
JSON::

    {"format": "units/1", "sha256": <the passage's>, "start": [...], "end": [...],
     "text": [...], "code": [...], "terms": [...], "wording": [...]}

one list per field of :class:`~.units.Unit`, in its order, ``terms`` space-separated
(columns rather than rows: read back with ``map``, they cost a third less). A stored
form is used only when it is of this ``FORMAT`` and was cut from exactly this passage
(its sha256): a chunk cut by an older rule, or stored with its text altered
(PostgreSQL holds no NUL), is cut afresh, as is a form that does not parse, or whose
columns differ in length or type, or whose spans do not fit the passage. A unit whose
text is not its span's (:func:`quoted_from`) is never quoted: the generator checks
each unit it is about to quote and cuts the passages afresh when one fails.

Otherwise the form is trusted as the chunk text beside it is (whoever can write one
row can write the other): its spans, terms and wordings steer which units are chosen,
and are not re-derived, which would cost what storing saves. What the reader is shown
is checked against the text: each quoted unit's words here, and every segment of a
generator that quotes must be ``verbatim`` (``SupportStep.decide``).
"""

from __future__ import annotations

import hashlib
import json
import operator
from itertools import repeat

from citadel.adapters.generators.extractive.units import Unit, quotable_units

FORMAT = "units/1"
"""Bump with any change to what :func:`quotable_units` returns: stored forms of
another format are not read."""


_FIELDS = ("start", "end", "text", "code", "terms", "wording")
_TYPES = (int, int, str, bool, str, str)


MAX_STORED_PER_CHARACTER = 16
MAX_STORED_EXTRA = 4096
"""A stored form longer than 16 characters a passage character plus 4 KiB is not read:
cutting gives at most 1.9 a character plus 4 KiB on the QA library's 12,590 chunks, and
a form inflated in the library file would cost every answer citing it (a 10.8 MB one,
0.77 s)."""


def stored_units(passage: str) -> str:
    """``passage``'s quotable units in the stored form."""
    units = quotable_units(passage)
    columns: dict[str, object] = {"format": FORMAT, "sha256": _sha256(passage)}
    for name, values in zip(_FIELDS, zip(*units, strict=True) if units else [()] * 6, strict=True):
        columns[name] = list(values)
    columns["terms"] = [" ".join(sorted(u.terms)) for u in units]
    return json.dumps(columns, ensure_ascii=False, separators=(",", ":"))


def read_units(stored: str | None, passage: str) -> tuple[Unit, ...] | None:
    """The units of ``stored`` if it is a form of this format cut from ``passage``;
    None otherwise (the caller cuts them)."""
    if not stored or len(stored) > MAX_STORED_PER_CHARACTER * len(passage) + MAX_STORED_EXTRA:
        return None  # none, or far more than cutting gives: never parsed on the answer path
    try:
        found = json.loads(stored)
        if found["format"] != FORMAT or found["sha256"] != _sha256(passage):
            return None
        columns = [found[name] for name in _FIELDS]
        if not all(type(c) is list and len(c) == len(columns[0]) for c in columns):
            return None
        for column, kind in zip(columns, _TYPES, strict=True):
            if not set(map(type, column)) <= {kind}:  # (bool is no int here, nor int bool)
                return None
        starts, ends, texts, codes, terms, wordings = columns
        if starts and (
            min(starts) < 0 or max(ends) > len(passage) or not all(map(operator.lt, starts, ends))
        ):
            return None
        sets = map(frozenset, map(str.split, terms))
        rows = zip(starts, ends, texts, codes, sets, wordings, strict=True)
        # Unit's own __new__ is Python, a third of the reading: the tuple's, with the
        # six fields in order, makes the same named tuple in C.
        return tuple(map(tuple.__new__, repeat(Unit), rows))
    except (ValueError, TypeError, KeyError, RecursionError):  # not JSON, not this shape
        return None


def quoted_from(unit: Unit, passage: str) -> bool:
    """Whether the unit's text is its span of ``passage`` (whitespace runs aside; prose
    has them as one space). Not checked by :func:`read_units`, which would check every
    unit: a caller checks the few it quotes, so a stored form edited by hand (or cut
    wrong) is never quoted."""
    shown = " ".join(unit.text.split()) if unit.code else unit.text
    return shown == " ".join(passage[unit.start : unit.end].split())


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
