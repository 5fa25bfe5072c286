"""Host rules: what a host must be for a link to point to it.

The host is mapped the way IDNA maps it and checked in that form: lower-case
punycode labels of letters, digits and hyphens; no IP address in any spelling,
no ``localhost``, single label or internal name, no trailing dot; each label in
one script, and a skeleton (what it looks like) to compare with the allowlist.
"""

from __future__ import annotations

import encodings.idna
import re
import unicodedata

from citadel.domain.confusables import PROTOTYPES
from citadel.domain.links.verdict import LinkRefusal

_IDNA_DOTS = re.compile("[.\u3002\uff0e\uff61]")
_LDH_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# WHATWG hands a host whose last label is a number in any base to its IPv4
# parser: 2130706433, 0x7f000001, 0177.0.0.1, 127.1 all reach 127.0.0.1.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_MAX_HOST = 253

# Letters and marks that render as nothing: fillers, blank braille, the
# grapheme joiner and the variation selectors.
INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180e\u2800\u3164\uffa0"
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))
    + "".join(chr(c) for c in range(0xE0100, 0xE01F0))
)
# IDNA 2003 maps these (sharp s and final sigma to "ss" and "σ", the zero-width
# joiners to nothing); IDNA 2008 and browsers (UTS 46, non-transitional) keep them.
# Either way a reader would land on a host other than the one the author wrote.
IDNA_DEVIATIONS = frozenset("\u00df\u03c2\u200c\u200d")

# Special-use and never-delegated top-level names (RFC 2606, 6761, 6762, 8375,
# 9476, and the habits of internal networks). "example.org" is an ordinary
# name; only "example" as the last label is reserved.
_INTERNAL_TLDS = frozenset(
    {
        "alt",
        "arpa",
        "corp",
        "example",
        "home",
        "internal",
        "intranet",
        "invalid",
        "lan",
        "local",
        "localdomain",
        "onion",
        "private",
        "test",
    }
)

# Letters of other scripts, and ASCII digits, that pass for ASCII letters (one table
# with the names': domain/confusables.py); hosts are compared lower-cased.
_CONFUSABLES = str.maketrans(PROTOTYPES)

# Script sets one label may combine (UTS #39, "highly restrictive").
_SCRIPT_COMBINATIONS = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
_SCRIPT_ALIASES = {
    "CJK": "HAN",
    "IDEOGRAPHIC": "HAN",
    "KATAKANA-HIRAGANA": "KATAKANA",
    "ARABIC-INDIC": "ARABIC",
    "EXTENDED": "ARABIC",  # EXTENDED ARABIC-INDIC DIGIT ...
}


def canonical_host(host: str) -> tuple[str, tuple[str, ...]] | LinkRefusal:
    """The host as lower-case punycode, with its labels in Unicode; or why it is no host."""
    if any(char in IDNA_DEVIATIONS for char in host):
        return LinkRefusal.INVALID_IDN
    raw_labels = _IDNA_DOTS.split(host)
    trailing_dot = len(raw_labels) > 1 and raw_labels[-1] == ""
    if trailing_dot:
        raw_labels.pop()
    if any(not label for label in raw_labels):
        return LinkRefusal.EMPTY_LABEL
    ascii_labels: list[str] = []
    for label in raw_labels:
        if label.isascii():
            ascii_label = label.lower()
        else:
            try:
                ascii_label = encodings.idna.ToASCII(label).decode("ascii").lower()
            except UnicodeError:
                return LinkRefusal.INVALID_IDN
        if not _LDH_LABEL.fullmatch(ascii_label):
            return LinkRefusal.MALFORMED if label.isascii() else LinkRefusal.INVALID_IDN
        ascii_labels.append(ascii_label)
    ascii_host = ".".join(ascii_labels)
    if len(ascii_host) > _MAX_HOST:
        return LinkRefusal.MALFORMED
    last = ascii_labels[-1]
    if _NUMERIC_LABEL.fullmatch(last):
        return LinkRefusal.IP_LITERAL
    if last == "localhost":
        return LinkRefusal.LOCALHOST
    if len(ascii_labels) == 1:
        return LinkRefusal.SINGLE_LABEL
    if last in _INTERNAL_TLDS:
        return LinkRefusal.INTERNAL_NAME
    if trailing_dot:
        return LinkRefusal.TRAILING_DOT
    unicode_labels: list[str] = []
    for ascii_label in ascii_labels:
        unicode_label = _to_unicode_label(ascii_label)
        if unicode_label is None:
            return LinkRefusal.INVALID_IDN
        unicode_labels.append(unicode_label)
    return ascii_host, tuple(unicode_labels)


def _to_unicode_label(label: str) -> str | None:
    """The Unicode form of an ASCII label; None for a punycode label IDNA would not produce.

    A decoded label may hold only letters, marks, digits and hyphens: the
    punycode form can carry anything, symbols and invisible fillers included,
    and a label may not open with a combining mark.
    """
    if not label.startswith("xn--"):
        return label
    try:
        decoded = encodings.idna.ToUnicode(label)
    except (ValueError, OverflowError, IndexError):  # the punycode codec's failures
        return None
    if not decoded or unicodedata.category(decoded[0]).startswith("M"):
        return None  # a combining mark needs a base to sit on
    for char in decoded:
        if char in INVISIBLE or char in IDNA_DEVIATIONS:
            return None
        if char != "-" and unicodedata.category(char) not in {"Ll", "Lo", "Lm", "Mn", "Mc", "Nd"}:
            return None
    return decoded


def to_unicode_host(host: str) -> str:
    return ".".join(_to_unicode_label(label) or label for label in host.split("."))


def _script(char: str) -> str | None:
    """The script of a letter or digit, from its Unicode name; None when it has none of its own."""
    if char.isascii():
        return "LATIN" if char.isalpha() else None
    category = unicodedata.category(char)
    if category.startswith("M"):
        return None  # combining marks inherit the script of their base
    first = unicodedata.name(char, "UNNAMED").split(" ", 1)[0]
    return _SCRIPT_ALIASES.get(first, first)


def single_script(label: str) -> bool:
    scripts = {script for script in map(_script, label) if script is not None}
    return len(scripts) <= 1 or any(scripts <= allowed for allowed in _SCRIPT_COMBINATIONS)


def skeleton_of(text: str) -> str:
    """What a name looks like: confusable letters mapped to ASCII, "rn" read as "m"."""
    return text.translate(_CONFUSABLES).replace("rn", "m").replace("vv", "w")
