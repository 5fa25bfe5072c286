"""A passage as a reader sees it: prose paragraphs, and code kept as code.

Stored passages keep the document's line breaks: in prose they are only where a
PDF line ended, in code they matter. A line reads as code when it starts with a
shell, Python, R or SQL prompt, or sits in a run of lines (between blank lines)
every one of which carries code punctuation or is indented and none of which
is mostly plain words (as prose is); everything else is
prose. When in doubt a line is prose: prose shown as code is still readable,
code folded into prose is not.

Prose is reflowed the way a reader would: a line break where the line ran to
the margin is folded into a space, but a break after a line that stopped well
short of the run's longest (a heading, a list item's or a paragraph's end) is
kept, and so is one before a list marker (``•``, ``-``, ``1.``, ``a)``): each
kept break starts a paragraph of its own.

(The extractive generator decides the same question for quoting, in the
adapters layer, which entrypoints may not import; this is the display's rule.)
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

_PROMPT = re.compile(r"^\s*(?:\$|%|>>>|\.\.\.|>|\+|[\w-]*=[#>])\s+\S")
_SIGNAL = re.compile(r"[(){}\[\]=<>;|\\$`]|(?:^|\s)--?[A-Za-z]|::|->|\w\.\w+\(")
_INDENTED = re.compile(r"^(?: {2,}|\t)\S")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z][a-z]+")
_TRIM = "()[]{},.;:!?\"'“”‘’"
_MARKER = re.compile(r"^\s*(?:[•◦▪‣∙·*–—-]|\(?(?:\d{1,3}|[a-z]|[ivx]{1,5})[.)])\s+\S")
FULL_LINE = 0.75
"""A prose line at least this share of the run's longest ran to the margin (its break
is folded); a shorter one ended where its author ended it."""


@dataclass(frozen=True, slots=True)
class Block:
    text: str
    code: bool


def _wordy(line: str) -> bool:
    """Prose: five or more tokens, seven in ten of them plain words."""
    tokens = line.split()
    plain = sum(1 for t in tokens if _WORD.fullmatch(t.strip(_TRIM)))
    return plain >= 5 and plain >= 0.7 * len(tokens)


def _codeish(line: str) -> bool:
    if _wordy(line):
        return False
    return bool(_SIGNAL.search(line) or _INDENTED.match(line))


@dataclass(frozen=True, slots=True)
class Line:
    start: int
    """Where the line starts in the text (its end is ``start + len(text)``)."""
    text: str
    """The line without its trailing whitespace."""
    run: int
    """Which run of lines (between blank lines) it is in."""
    code: bool


def classified_lines(text: str) -> list[Line]:
    """Every non-blank line of ``text`` with where it is and whether it reads as code."""
    out: list[Line] = []
    starts = [0] + [m.end() for m in re.finditer(r"\n[ \t\r\f\v]*\n", text)]
    ends = [m.start() for m in re.finditer(r"\n[ \t\r\f\v]*\n", text)] + [len(text)]
    for run, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
        lines: list[tuple[int, str]] = []
        offset = lo
        for raw in text[lo:hi].split("\n"):
            if raw.strip():
                lines.append((offset, raw.rstrip()))
            offset += len(raw) + 1
        whole = len(lines) > 1 and all(_codeish(line) for _, line in lines)
        out.extend(
            Line(start, line, run, whole or bool(_PROMPT.match(line))) for start, line in lines
        )
    return out


def passage_blocks(text: str) -> tuple[Block, ...]:
    """``text`` as paragraphs and code blocks, in reading order."""
    blocks: list[Block] = []
    group: list[Line] = []
    for line in classified_lines(text):
        if group and (line.run != group[0].run or line.code != group[0].code):
            _add(blocks, [g.text for g in group], group[0].code)
            group = []
        group.append(line)
    if group:
        _add(blocks, [g.text for g in group], group[0].code)
    return tuple(blocks)


def code_ranges(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of each stretch of code lines in ``text`` (the viewer sets them
    in monospace), by the rule ``passage_blocks`` uses."""
    ranges: list[tuple[int, int]] = []
    previous: Line | None = None
    for line in classified_lines(text):
        end = line.start + len(line.text)
        if line.code:
            joined = previous is not None and previous.code and previous.run == line.run
            if joined and ranges:
                ranges[-1] = (ranges[-1][0], end)
            else:
                ranges.append((line.start, end))
        previous = line
    return ranges


def _add(blocks: list[Block], lines: list[str], code: bool) -> None:
    if code:
        # Common indentation off, the rest kept: it is part of the code.
        indent = min(len(line) - len(line.lstrip()) for line in lines)
        blocks.append(Block("\n".join(line[indent:] for line in lines), code=True))
    else:
        for paragraph in _paragraphs(lines):
            blocks.append(Block(_SPACES.sub(" ", " ".join(paragraph)).strip(), code=False))


def _paragraphs(lines: list[str]) -> list[list[str]]:
    """Prose lines grouped into paragraphs at the breaks worth keeping."""
    longest = max(len(line.strip()) for line in lines)
    paragraphs: list[list[str]] = [[lines[0]]]
    for before, line in itertools.pairwise(lines):
        ended = len(before.strip()) < FULL_LINE * longest
        if ended or _MARKER.match(line):
            paragraphs.append([line])
        else:
            paragraphs[-1].append(line)
    return paragraphs


def lead(text: str, limit: int = 240) -> str:
    """The passage's first words, folded onto one line, cut at a word near ``limit``."""
    folded = _SPACES.sub(" ", text).strip()
    if len(folded) <= limit:
        return folded
    cut = folded.rfind(" ", 0, limit)
    return folded[: cut if cut > limit // 2 else limit].rstrip(" ,;:") + "…"
