"""The extractive generator's text cutting as it was before it was made faster: the oracle.

``split_sentences`` (from ``citadel.domain.text``) and ``quotable_units`` (from
``citadel.adapters.generators.extractive.units``) exactly as they were at f9d79d7,
kept only so tests can assert that the faster versions give the same output on
every input. Never imported by ``src/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from citadel.domain.text import STOPWORDS, stem

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset(
    {
        "e.g.",
        "i.e.",
        "etc.",
        "vs.",
        "cf.",
        "fig.",
        "figs.",
        "eq.",
        "eqs.",
        "no.",
        "vol.",
        "ch.",
        "sec.",
        "p.",
        "pp.",
        "dr.",
        "mr.",
        "ms.",
        "al.",
        "approx.",
        "resp.",
        "ref.",
        "refs.",
    }
)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of ``text``; a cheap rule-based splitter.

    It avoids breaking after common abbreviations and single initials, which
    are frequent in technical prose ("e.g.", "Fig. 3", "J. Smith"), and it
    ends a sentence at a short line without closing punctuation — a heading,
    a caption or a line of code — so those never glue onto the next sentence.
    """
    spans: list[tuple[int, int]] = []
    for run_start, run_end in _standalone_runs(text):
        run = text[run_start:run_end]
        spans.extend((run_start + s, run_start + e) for s, e in _prose_sentences(run))
    return spans


_SHORT_LINE = 60


def _standalone_runs(text: str) -> list[tuple[int, int]]:
    """Cut ``text`` after every short line that does not end in sentence punctuation."""
    runs: list[tuple[int, int]] = []
    start = 0
    position = 0
    for line in text.splitlines(keepends=True):
        end = position + len(line)
        body = line.strip()
        if body and len(body) <= _SHORT_LINE and body[-1] not in ".,;:!?" and end < len(text):
            runs.append((start, end))
            start = end
        position = end
    if start < len(text):
        runs.append((start, len(text)))
    return runs


def _prose_sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.start()
        last_word = (
            text[start:end].rsplit(None, 1)[-1].casefold() if text[start:end].strip() else ""
        )
        if last_word in _ABBREVIATIONS or (len(last_word) == 2 and last_word[0].isalpha()):
            continue
        if text[start:end].strip():
            spans.append((start, end))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


MAX_BLOCK_LINES = 6
"""A code block of more lines is quoted line by line, not whole."""
MAX_BLOCK_CHARS = 400
MIN_SENTENCE_WORDS = 5

# A prompt as the shared books print them: shell ("$ ", "# " at a root prompt, "% "),
# Python (">>> ", "... "), R ("> ", "+ " continuing a line) and psql ("postgres=# ",
# "=> ").
_PROMPT = re.compile(r"^\s*(?:\$|%|>>>|\.\.\.|>|[\w-]*=[#>]|\([\w.-]+\)\s*\$)\s+\S")
_CONTINUATION = re.compile(r"^\s*\+\s+\S")
# What makes a line of a code block read as code rather than a heading or prose: code
# punctuation, a command-line option, an indented line, a dotted name. (Bare lower-case
# words are not enough: "git status" reads as code, "which continues" as a cut sentence.)
_CODE_SIGNAL = re.compile(r"[(){}\[\]=<>;|\\$`]|(?:^|\s)--?[A-Za-z]|^\s{2,}\S|::|->|\w\.\w+")
_SENTENCE_CLOSE = re.compile(r"[.!?][\"'”’)\]]*$")
_ELLIPSIS = re.compile(r"(?:\.\.\.|…)[\"'”’)\]]*$")
_SENTENCE_OPEN = re.compile(r"^[\"'“‘(\[]?[A-Z0-9]")
_INTRO_END = re.compile(r"(?:[:,]|[A-Za-z0-9)])$")
_WORDING = re.compile(r"[^\W_]+")
_CLOSERS = frozenset("\"')]”’")


@dataclass(frozen=True, slots=True)
class Unit:
    """One quotable piece of a passage: its span there and the text to show."""

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
    return _terms(_WORDING.findall(text.casefold()))


def _terms(words: list[str]) -> frozenset[str]:
    return frozenset(map(stem, set(words) - STOPWORDS))


def _unit(start: int, end: int, text: str, *, code: bool) -> Unit:
    words = _WORDING.findall(text.casefold())
    return Unit(start, end, text, code, _terms(words), " ".join(words))


@dataclass(frozen=True, slots=True)
class _Line:
    start: int
    end: int
    body: str
    code: bool


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
    lines: list[_Line] = []
    position = 0
    for raw in passage.splitlines(keepends=True):
        body = raw.rstrip("\r\n")
        if body.strip():
            lines.append(_Line(position, position + len(body.rstrip()), body, False))
        else:
            lines.append(_Line(position, position, "", False))  # a blank line: a separator
        position += len(raw)
    marked: list[_Line] = []
    block: list[_Line] = []
    for line in [*lines, _Line(len(passage), len(passage), "", False)]:
        if line.body:
            block.append(line)
            continue
        marked.extend(_mark_block(block))
        block = []
    return marked


def _mark_block(block: list[_Line]) -> list[_Line]:
    if not block:
        return []
    whole = all(_code_like(line.body) for line in block) and not _SENTENCE_CLOSE.search(
        block[-1].body.strip()
    )
    if whole or _is_prompt_block(block):
        return [_Line(b.start, b.end, b.body, True) for b in block]
    marked: list[_Line] = []
    for line in block:
        prompt = bool(_PROMPT.match(line.body)) or bool(
            marked and marked[-1].code and _CONTINUATION.match(line.body)
        )
        marked.append(_Line(line.start, line.end, line.body, prompt))
    return marked


def _is_prompt_block(block: list[_Line]) -> bool:
    """A short block that starts at a prompt: the command and what it printed."""
    return (
        len(block) <= MAX_BLOCK_LINES * 2
        and bool(_PROMPT.match(block[0].body))
        and not any(
            _SENTENCE_CLOSE.search(b.body.strip()) and not _ELLIPSIS.search(b.body.strip())
            for b in block[1:]
            if len(b.body.split()) > 6
        )
    )


def _code_like(body: str) -> bool:
    stripped = body.strip()
    if _PROMPT.match(body):
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
    for number, (s, e) in enumerate(spans):
        text = " ".join(segment[s:e].split())
        opens = bool(_SENTENCE_OPEN.match(text)) or (closed and text[:1].islower())
        ends = bool(_SENTENCE_CLOSE.search(text)) and not _ELLIPSIS.search(text)
        if opens and ends and len(text.split()) >= MIN_SENTENCE_WORDS:
            close = _closing(passage, start + e)
            units.append(_unit(start + s, close, text + passage[start + e : close], code=False))
        last = number == len(spans) - 1
        if last and opens and not ends and len(text.split()) >= 3 and _INTRO_END.search(text):
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
