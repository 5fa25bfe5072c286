"""Names people type and read — users, tenants, groups — and when two look alike.

A name is compared by its skeleton: what it looks like, not which code points spell
it. ``skeleton`` folds compatibility forms (NFKC: ``ｇ1`` is ``g1``), then maps each
confusable character to its ASCII prototype *before* case-folding, then case-folds.
The order matters: a capital ``I`` looks like a small ``l`` but case-folds to ``i``,
so folding case first would let ``IibA`` stand beside ``libA``. Multi-letter
look-alikes (``rn`` for ``m``, ``vv`` for ``w``) are read last.

The table is this project's own small subset of what Unicode's confusables list
covers: Cyrillic and Greek letters (both cases) that render like Latin ones, the
Latin letters that pass for others (dotless i, script g), and the digit-letter
pairs of common fonts (``0``/``O``, ``1``/``l``/``I``). Two names look alike when
any reading of one is a reading of the other (``skeletons``). A new name must also be in
NFKC form already and of one script (``check_new_name``): two spellings of one
look, or ``аdam`` with a Cyrillic a, are refused outright.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from citadel.domain.confusables import PROTOTYPES
from citadel.domain.errors import InvalidValue
from citadel.domain.links.hosts import single_script

_TABLE = str.maketrans(PROTOTYPES)
_SEQUENCES = (("rn", "m"), ("vv", "w"))


def skeleton(name: str) -> str:
    """What ``name`` looks like: NFKC, confusables mapped (before case-folding), case
    folded, multi-letter look-alikes read."""
    return _sequences(unicodedata.normalize("NFKC", name).translate(_TABLE).casefold())


def skeletons(name: str) -> frozenset[str]:
    """Every way ``name`` may be read: its ``skeleton``, and its skeleton with case
    folded first. A capital I passes both for l (by its look) and for i (by its case):
    ``Ian`` looks like ``lan`` and like ``ian``."""
    nfkc = unicodedata.normalize("NFKC", name)
    return frozenset({skeleton(name), _sequences(nfkc.casefold().translate(_TABLE))})


def _sequences(text: str) -> str:
    text = text.translate(_TABLE)
    for sequence, letter in _SEQUENCES:
        text = text.replace(sequence, letter)
    return text


def check_new_name(kind: str, name: str) -> str:
    """``name`` when a new user, tenant or group may take it: in NFKC form (``ｇ1`` is
    refused: it is ``g1``), and its letters of one script. ``InvalidValue`` otherwise;
    ``kind`` names the value in the message. Names made before keep working."""
    nfkc = unicodedata.normalize("NFKC", name)
    if nfkc != name:
        raise InvalidValue(
            f"a {kind} name must be in Unicode NFKC form: {name!r} is written {nfkc!r}"
        )
    if not single_script(name):
        raise InvalidValue(f"a {kind} name may not mix letters of several scripts")
    hidden = next((c for c in name if _invisible(c)), None)
    if hidden is not None:
        raise InvalidValue(
            f"a {kind} name may not hold U+{ord(hidden):04X}, which shows as nothing"
        )
    return name


# Unicode's default-ignorable code points outside the format (Cf) category, which
# renderers draw as nothing: combining grapheme joiner, Hangul fillers, Mongolian and
# other variation selectors, Khmer inherent vowels (DerivedCoreProperties.txt).
_INVISIBLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)


def _invisible(char: str) -> bool:
    """A character a reader cannot see: a format or control character, or one of the
    default-ignorable ones above."""
    if unicodedata.category(char) in {"Cf", "Cc", "Zl", "Zp"}:
        return True
    return any(low <= ord(char) <= high for low, high in _INVISIBLE)


def lookalike(name: str, existing: Iterable[str]) -> str | None:
    """An existing name other than ``name`` that looks like it, or None."""
    looks = skeletons(name)
    return next((other for other in existing if other != name and skeletons(other) & looks), None)
