"""Characters that pass for ASCII letters: one table for names and for hosts.

This project's own small subset of what Unicode's confusables list covers: Cyrillic,
Greek and Armenian letters that render like Latin ones, the Latin letters that pass
for others (dotless i, script g), and the digit-letter pairs of common fonts. Both
``names.skeleton`` (users, tenants, groups) and ``links.hosts.skeleton_of`` (host
names) read it, so a lookalike is the same lookalike wherever it is typed.
"""

from __future__ import annotations

# Each character maps to the lower-case ASCII letter it passes for. Applied before
# case-folding, so capitals that look like another letter (I, Cyrillic І, Greek Ι:
# all like l) are caught; capitals that look like their own letter map to it.
PROTOTYPES = {
    # Latin and ASCII: digits and capitals that pass for other letters
    "I": "l",
    "1": "l",
    "|": "l",
    "ǀ": "l",  # U+01C0 dental click
    "0": "o",
    "O": "o",
    "ı": "i",  # dotless i
    "ȷ": "j",
    "ɑ": "a",  # Latin alpha
    "ɡ": "g",  # script g
    "ɩ": "i",  # Latin iota
    "ʏ": "y",
    # Cyrillic, small
    "а": "a",
    "в": "b",
    "е": "e",
    "і": "i",
    "ј": "j",
    "к": "k",
    "о": "o",
    "р": "p",
    "с": "c",
    "х": "x",
    "у": "y",
    "ѕ": "s",
    "ԁ": "d",
    "һ": "h",
    "ԛ": "q",
    "ԝ": "w",
    "ү": "y",
    "ӏ": "l",
    # Cyrillic, capital
    "А": "a",
    "В": "b",
    "Е": "e",
    "І": "l",
    "Ј": "j",
    "К": "k",
    "М": "m",
    "Н": "h",
    "О": "o",
    "Р": "p",
    "С": "c",
    "Ѕ": "s",
    "Т": "t",
    "Х": "x",
    "У": "y",
    "Ү": "y",
    "Ӏ": "l",
    "Ԛ": "q",
    "Ԝ": "w",
    # Greek, small
    "α": "a",
    "γ": "y",
    "ι": "i",
    "κ": "k",
    "ν": "v",
    "ο": "o",
    "ρ": "p",
    "τ": "t",
    "υ": "u",
    "χ": "x",
    # Greek, capital
    "Α": "a",
    "Β": "b",
    "Ε": "e",
    "Ζ": "z",
    "Η": "h",
    "Ι": "l",
    "Κ": "k",
    "Μ": "m",
    "Ν": "n",
    "Ο": "o",
    "Ρ": "p",
    "Τ": "t",
    "Υ": "y",
    "Χ": "x",
    # Armenian
    "հ": "h",
    "ո": "n",
    "ս": "u",
    "օ": "o",
}
