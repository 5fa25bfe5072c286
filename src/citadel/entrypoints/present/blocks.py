"""A passage as a reader sees it: prose paragraphs, and code kept as code.

Stored passages keep the document's line breaks: in prose they are only where a
PDF line ended, in code they matter. A line reads as code when it starts with a
shell, Python, R or SQL prompt, or sits in a run of lines (between blank lines)
every one of which carries code punctuation or is indented and none of which
is mostly plain words (as prose is); everything else is
prose, its line breaks folded into spaces. When in doubt a line is prose: prose
shown as code is still readable, code folded into prose is not.

(The extractive generator decides the same question for quoting, in the
adapters layer, which entrypoints may not import; this is the display's rule.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PROMPT = re.compile(r"^\s*(?:\$|%|>>>|\.\.\.|>|\+|[\w-]*=[#>])\s+\S")
_SIGNAL = re.compile(r"[(){}\[\]=<>;|\\$`]|(?:^|\s)--?[A-Za-z]|::|->|\w\.\w+\(")
_INDENTED = re.compile(r"^(?: {2,}|\t)\S")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z][a-z]+")
_TRIM = "()[]{},.;:!?\"'“”‘’"


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


def passage_blocks(text: str) -> tuple[Block, ...]:
    """``text`` as paragraphs and code blocks, in reading order."""
    blocks: list[Block] = []
    for run in re.split(r"\n\s*\n", text.strip("\n")):
        lines = [line.rstrip() for line in run.split("\n") if line.strip()]
        if not lines:
            continue
        whole = len(lines) > 1 and all(_codeish(line) for line in lines)
        marks = [whole or bool(_PROMPT.match(line)) for line in lines]
        start = 0
        for i in range(1, len(lines) + 1):
            if i == len(lines) or marks[i] != marks[start]:
                _add(blocks, lines[start:i], marks[start])
                start = i
    return tuple(blocks)


def _add(blocks: list[Block], lines: list[str], code: bool) -> None:
    if code:
        # Common indentation off, the rest kept: it is part of the code.
        indent = min(len(line) - len(line.lstrip()) for line in lines)
        blocks.append(Block("\n".join(line[indent:] for line in lines), code=True))
    else:
        blocks.append(Block(_SPACES.sub(" ", " ".join(lines)).strip(), code=False))


def lead(text: str, limit: int = 240) -> str:
    """The passage's first words, folded onto one line, cut at a word near ``limit``."""
    folded = _SPACES.sub(" ", text).strip()
    if len(folded) <= limit:
        return folded
    cut = folded.rfind(" ", 0, limit)
    return folded[: cut if cut > limit // 2 else limit].rstrip(" ,;:") + "…"
