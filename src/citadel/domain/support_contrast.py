"""Two contrasts between a segment and its passage that a small cross-encoder misses.

The entailment model reads a segment beside the passage's best sentences and scores
a one-word swap much as the sentence it was made from (docs/support.md: identifier
swaps and antonyms are its weakest contradictions). Two cheap counts see them:

- ``identifiers_missing``: code-shaped tokens of the segment — an option flag
  (``-n``, ``--all``), a call (``read.table(``), a ``snake_case`` or ``dotted.name``,
  a ``camelCase`` word, a back-quoted span — that the passage never writes. A command
  or identifier the passage does not state is invented or swapped, as a number it
  never states is (``support_features``' ``numbers_missing``).
- ``antonym_conflict``: the segment uses a word whose opposite the passage uses,
  and the passage never uses the segment's word (``OPPOSITES``: pairs written for
  this project from general technical usage, not from the training pairs).

The entailment checker's logistic layer reads them (``adapters/support/stack.py``).
Standard library only: the domain's import contract.
"""

from __future__ import annotations

import re

CONTRAST_NAMES: tuple[str, ...] = ("identifiers_missing", "antonym_conflict")

_IDENTIFIER = re.compile(
    r"(?<!\S)--?[A-Za-z][\w-]*+"  # an option flag, standing alone
    r"|(?<![\w.])[A-Za-z_][\w.]*+\("  # a call
    r"|(?<!\w)[A-Za-z][A-Za-z0-9]*+_\w++"  # snake_case
    r"|(?<![\w.])[A-Za-z]\w*+\.[A-Za-z]\w*+"  # a dotted name (not a decimal number)
    r"|(?<!\w)[a-z]++[A-Z]\w*+"  # camelCase
    r"|`[^`\n]++`"  # a back-quoted span
)
"""Each alternative starts only where a token does and never backtracks (possessive
quantifiers), so a long run of word characters costs linear time."""
_WORDS = re.compile(r"[a-z]+(?:-[a-z]+)*")

_PAIRS = """
enable disable, enabled disabled, enables disables, true false, before after,
first last, local remote, add remove, adds removes, added removed, start stop,
starts stops, open close, opens closes, always never, all none, include exclude,
includes excludes, included excluded, input output, upper lower, left right,
minimum maximum, min max, increase decrease, increases decreases, more less,
faster slower, older newer, oldest newest, public private, read write, reads writes,
push pull, static dynamic, global local, inner outer, import export, above below,
higher lower, larger smaller, largest smallest, longer shorter, mutable immutable,
explicit implicit, explicitly implicitly, required optional, allowed forbidden,
allow forbid, same different, empty full, ascending descending, parent child,
inside outside, beginning end, head tail, success failure, accept reject,
accepts rejects, create delete, creates deletes, created deleted, show hide,
shows hides, visible hidden, valid invalid, safe unsafe, equal unequal,
positive negative, even odd, row column, rows columns, synchronous asynchronous,
lazy eager, earlier later, keep discard, keeps discards, staged unstaged,
tracked untracked, server client, upstream downstream, strict lenient,
sorted unsorted, case-sensitive case-insensitive, prefix suffix, leading trailing,
succeeds fails, lowest highest,
"""
OPPOSITES: dict[str, frozenset[str]] = {}
for _pair in _PAIRS.replace("\n", " ").split(","):
    _words = _pair.split()
    if len(_words) == 2:
        _a, _b = _words
        OPPOSITES[_a] = OPPOSITES.get(_a, frozenset()) | {_b}
        OPPOSITES[_b] = OPPOSITES.get(_b, frozenset()) | {_a}


def identifiers_missing(segment: str, passage: str) -> int:
    """How many distinct code-shaped tokens of ``segment`` ``passage`` never writes."""
    found = {m.group(0).strip("`") for m in _IDENTIFIER.finditer(segment)}
    return sum(1 for token in found if token and token not in passage)


def antonym_conflict(segment: str, passage: str) -> bool:
    """The segment says a word, the passage its opposite and never the word itself."""
    said = set(_WORDS.findall(segment.lower()))
    written = set(_WORDS.findall(passage.lower()))
    return any(
        word not in written and OPPOSITES[word] & written for word in said & OPPOSITES.keys()
    )


def contrast_features(segment: str, passage: str) -> tuple[float, ...]:
    """The values of ``CONTRAST_NAMES``, in order."""
    return (
        float(identifiers_missing(segment, passage)),
        float(antonym_conflict(segment, passage)),
    )
