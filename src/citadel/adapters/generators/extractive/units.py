"""The quotable units of one passage: whole sentences, code lines and short code blocks.

A passage is a chunk of a book, and a chunk boundary can cut a sentence: a passage
may start in the middle of one and end before its close. Only whole units are
quotable:

- a *sentence* starts like one (a capital, a digit, an opening quote or bracket; a
  lower-case start only right after a finished sentence of the same paragraph, never
  first in the passage or after code) and ends like one (``.``, ``!`` or ``?``,
  closing quotes or brackets allowed after). A passage that starts mid-sentence
  ("of the budget before ...") therefore never has that head quoted, nor an
  unterminated tail, nor a sentence that continues after a code line;
- a *code line* is a line with a shell, Python, R or psql prompt, or a line of a
  block (between blank lines) every line of which reads as code; consecutive code
  lines make a code block, and a short one is quotable whole, its line breaks kept;
- a sentence that introduces a short code block (it ends in ``:`` or ``,``, or with
  no punctuation at all, right before the code) is quotable together with the block.

Every unit's text is the passage's own text between ``start`` and ``end`` modulo
whitespace runs: prose has them collapsed to one space (a PDF's line breaks), code
keeps its line breaks, without trailing spaces and the indentation all its lines share.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from citadel.domain.text import STOPWORDS, split_sentences, stem

MAX_BLOCK_LINES = 6
"""A code block of more lines is quoted line by line, not whole."""
MAX_BLOCK_CHARS = 400
MIN_SENTENCE_WORDS = 5

# A prompt as the shared books print them: shell ("$ ", "# " at a root prompt, "% "),
# Python (">>> ", "... "), R ("> ", "+ " continuing a line) and psql ("postgres=# ",
# "=> ").
_PROMPT = re.compile(r"^\s*(?:\$|%|>>>|\.\.\.|>|[\w-]*=[#>]|\([\w.-]+\)\s*\$)\s+\S")
# Every prompt holds one of these: a passage with none has no prompt line.
_PROMPT_MARKS = ("$", "%", ">", "...", "=#")
_CONTINUATION = re.compile(r"^\s*\+\s+\S")
# What makes a line of a code block read as code rather than a heading or prose: code
# punctuation, a command-line option, an indented line, a dotted name. (Bare lower-case
# words are not enough: "git status" reads as code, "which continues" as a cut sentence.)
_CODE_SIGNAL = re.compile(r"[(){}\[\]=<>;|\\$`]|(?:^|\s)--?[A-Za-z]|^\s{2,}\S|::|->|\w\.\w+")
_CLOSERS = "\"')]”’"
"""What may follow a sentence's stop: closing quotes and brackets."""
_STOPS = (".", "!", "?")
_ELLIPSES = ("...", "…")
_OPENERS = frozenset("\"'“‘([")
_CAPITALS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_INTRO_LAST = frozenset(":,)ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_WORDING = re.compile(r"[^\W_]+")
# ASCII text's words without a regex: letters and digits lower-cased, all else a space.
_ASCII_WORDING = bytes(
    c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256)
)


class Unit(NamedTuple):
    """One quotable piece of a passage: its span there and the text to show.

    (A named tuple rather than a frozen dataclass: as immutable, and made several
    times faster, which counts when a passage is cut into units on the answer path.)"""

    start: int
    end: int
    text: str
    code: bool
    """A code line or block (text keeps its line breaks), alone or after its introduction."""
    terms: frozenset[str]
    """Its terms, as :func:`unit_terms` makes them."""
    wording: str
    """Its words, case-folded: two units that say the same have the same wording."""


def unit_terms(text: str) -> frozenset[str]:
    """The stems of ``text``'s words other than stop words (as :func:`citadel.domain.text.terms`
    makes them, but hyphenated words count as their parts)."""
    return _terms(_words(text))


def _words(text: str) -> list[str]:
    """``text``'s runs of letters and digits, case-folded."""
    if text.isascii():  # the same runs, as bytes.translate finds them (a few times faster)
        return _ascii_folded(text).split()
    return _WORDING.findall(text.casefold())


def _ascii_folded(text: str) -> str:
    """ASCII ``text`` with its letters lower-cased and every other character but digits a
    space, at the same offsets."""
    return text.encode("ascii").translate(_ASCII_WORDING).decode("ascii")


def _terms(words: list[str]) -> frozenset[str]:
    # Built exactly as before the stems were memoised here (the same insertions in the
    # same order): the choice sums over these sets, and a float sum depends on its order.
    return frozenset(map(_STEMS.__getitem__, set(words) - STOPWORDS))


class _Stems(dict[str, str]):
    """Each word's stem, one dictionary look-up per word (bounded: emptied when it grows
    past ``_STEMS_KEPT`` words)."""

    def __missing__(self, word: str) -> str:
        if len(self) >= _STEMS_KEPT:
            self.clear()
        found = self[word] = stem(word)
        return found


_STEMS_KEPT = 1 << 16
_STEMS = _Stems()


def _unit(start: int, end: int, text: str, *, code: bool) -> Unit:
    words = _words(text)
    return Unit(start, end, text, code, _terms(words), " ".join(words))


class _Line(NamedTuple):
    start: int
    end: int
    body: str
    code: bool


def _closes(text: str) -> bool:
    """Whether ``text`` ends like a sentence: a stop, then closing quotes or brackets."""
    return text.rstrip(_CLOSERS).endswith(_STOPS)


def _trails_off(text: str) -> bool:
    """Whether ``text`` ends in an ellipsis (closing quotes or brackets allowed after)."""
    return text.rstrip(_CLOSERS).endswith(_ELLIPSES)


def _opens(text: str) -> bool:
    """Whether ``text`` starts like a sentence: a capital or a digit, maybe after an
    opening quote or bracket."""
    first = text[:1]
    return first in _CAPITALS or (first in _OPENERS and text[1:2] in _CAPITALS)


def quotable_units(passage: str) -> list[Unit]:
    """The passage's whole sentences, code lines and short code blocks, in reading order."""
    lines = _classify(passage)
    units: list[Unit] = []
    prose_start: int | None = None
    # Whether the text just before the current position ended a sentence: a lower-case
    # sentence start is whole only then. The passage start counts as not ended.
    previous_closed = False
    pending_intro: tuple[int, int] | None = None  # a sentence waiting for its code
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.code:
            if prose_start is None:
                prose_start = line.start
            index += 1
            continue
        # A run of code lines: first the prose before it.
        if prose_start is not None:
            sentences, previous_closed, pending_intro = _prose(
                passage, prose_start, line.start, previous_closed
            )
            units.extend(sentences)
            prose_start = None
        run_end = index
        while run_end < len(lines) and lines[run_end].code:
            run_end += 1
        block = lines[index:run_end]
        units.extend(_code(passage, block, pending_intro))
        # What follows code may continue the sentence before it ("... for example:",
        # code, "will produce ..."): a lower-case start there is never taken as a new one.
        pending_intro = None
        previous_closed = False
        index = run_end
    if prose_start is not None:
        sentences, _, _ = _prose(passage, prose_start, len(passage), previous_closed)
        units.extend(sentences)
    return units


def _classify(passage: str) -> list[_Line]:
    """Every non-blank line with its span, marked code or not."""
    prompts = any(mark in passage for mark in _PROMPT_MARKS)
    marked: list[_Line] = []
    block: list[_Line] = []  # the non-blank lines since the last blank one
    position = 0
    for raw in passage.splitlines(keepends=True):
        body = raw.rstrip("\r\n")
        if body.strip():
            block.append(_Line(position, position + len(body.rstrip()), body, False))
        elif block:  # a blank line: a separator
            marked.extend(_mark_block(block, prompts))
            block = []
        position += len(raw)
    if block:
        marked.extend(_mark_block(block, prompts))
    return marked


def _mark_block(block: list[_Line], prompts: bool) -> list[_Line]:
    whole = all(_code_like(line.body, prompts) for line in block) and not _closes(
        block[-1].body.strip()
    )
    if whole or (prompts and _is_prompt_block(block)):
        return [line._replace(code=True) for line in block]
    if not prompts:
        return block
    marked: list[_Line] = []
    for line in block:
        prompt = bool(_PROMPT.match(line.body)) or bool(
            marked and marked[-1].code and _CONTINUATION.match(line.body)
        )
        marked.append(line._replace(code=prompt) if prompt else line)
    return marked


def _is_prompt_block(block: list[_Line]) -> bool:
    """A short block that starts at a prompt: the command and what it printed."""
    return (
        len(block) <= MAX_BLOCK_LINES * 2
        and bool(_PROMPT.match(block[0].body))
        and not any(
            _closes(b.body.strip()) and not _trails_off(b.body.strip())
            for b in block[1:]
            if len(b.body.split()) > 6
        )
    )


def _code_like(body: str, prompts: bool) -> bool:
    stripped = body.strip()
    if prompts and _PROMPT.match(body):
        return True
    if not stripped.isascii() or len(stripped) > 120 or not _CODE_SIGNAL.search(body):
        return False
    return not _prose_like(stripped)


def _prose_like(line: str) -> bool:
    """Prose, whatever punctuation it holds: a line of six words or more nearly all
    plain words, or of four or more that ends like a sentence or its lead-in and
    starts with a capital or is nearly all words."""
    tokens = line.split()
    wordy = sum(1 for t in tokens if t.strip(".,;:!?\"'").isalpha())
    if len(tokens) >= 6 and wordy >= 0.75 * len(tokens):
        return True
    if len(tokens) < 4 or line[-1] not in ".:,;!?":
        return False
    return line[0].isupper() or wordy >= 0.8 * len(tokens)


def _prose(
    passage: str, start: int, end: int, previous_closed: bool
) -> tuple[list[Unit], bool, tuple[int, int] | None]:
    """The whole sentences of ``passage[start:end]``; whether its text ended a sentence;
    and the span of its last sentence if that one introduces what follows."""
    units: list[Unit] = []
    closed = previous_closed
    intro: tuple[int, int] | None = None
    segment = passage[start:end]
    spans = split_sentences(segment)
    # An ASCII segment's words at once, in place (what follows a sentence's stop up to
    # its close is quotes and brackets: no words).
    folded = _ascii_folded(segment) if segment.isascii() else None
    last = len(spans) - 1
    for number, (s, e) in enumerate(spans):
        pieces = segment[s:e].split()
        text = " ".join(pieces)
        opens = _opens(text) or (closed and text[:1].islower())
        ends = _closes(text) and not _trails_off(text)
        if opens and ends and len(pieces) >= MIN_SENTENCE_WORDS:
            close = _closing(passage, start + e)
            shown = text + passage[start + e : close]
            words = folded[s:e].split() if folded is not None else _words(shown)
            units.append(Unit(start + s, close, shown, False, _terms(words), " ".join(words)))
        if number == last and opens and not ends and len(pieces) >= 3 and text[-1] in _INTRO_LAST:
            intro = (start + s, start + e)
        closed = ends
    return units, closed, intro


def _closing(passage: str, end: int) -> int:
    """``end`` moved past the closing quotes and brackets right after a sentence's stop."""
    while end < len(passage) and passage[end] in _CLOSERS:
        end += 1
    return end


def _code(passage: str, block: list[_Line], intro: tuple[int, int] | None) -> list[Unit]:
    """A short block whole (after its introduction, if it has one), else line by line."""
    text = "\n".join(line.body.rstrip() for line in block)
    units: list[Unit] = []
    short = len(block) <= MAX_BLOCK_LINES and len(text) <= MAX_BLOCK_CHARS
    if short:
        units.append(_unit(block[0].start, block[-1].end, _dedent(text), code=True))
        if intro is not None:
            lead = " ".join(passage[intro[0] : intro[1]].split())
            joined = lead + "\n" + _dedent(text)
            units.append(_unit(intro[0], block[-1].end, joined, code=True))
    if not short or len(block) > 1:
        units.extend(
            _unit(line.start, line.end, line.body.strip(), code=True)
            for line in block
            if _PROMPT.match(line.body) or not short
        )
    return [u for u in units if len(u.text) >= 3 and any(c.isalnum() for c in u.text)]


def _dedent(text: str) -> str:
    lines = text.split("\n")
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines)
