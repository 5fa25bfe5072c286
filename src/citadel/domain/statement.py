"""Whether a text states anything: the rule shared by the ``verbatim`` label and by
validation.

A passage contains many strings that state nothing: a number (``12``, ``1.2``,
``2 1.3``, ``50 MB``), a stop word (``the``), a letter (``x``), an identifier
(``lapply``). A segment made of one of them "quotes" its passage by accident, and
must never be shown as the book's words. Two predicates, one stricter than the other:

- :func:`states_something` — validation's floor: at least one content word, or a
  code line. A segment below it is refused (``states_nothing``), as ``...`` is.
- :func:`is_statement` — what a quotation needs to be ``verbatim``: a sentence
  (three content words, or two among at least four words: "Git stores snapshots.",
  "The trial ran from 2001 to 2005"; a capitalised or numbered text without a
  sentence's closing punctuation needs more than six words, so a heading is none;
  a question is none), or a code line.

A **content word** is a word (letters and digits, as ``domain.text`` splits them)
that begins with a letter, has at least two characters and is not a stop word;
numbers, and a unit right after a number (``50 MB``, ``12 ms``), are not.
A **code line** is a line with code punctuation — an assignment or operator
(``<-``, ``=``, ``==``, ``::``, ``%in%``, ``|>``), a call or index (``c(``,
``x[``), braces, a closing ``;``, an R/shell ``$name``, a command-line option
(`` -m``, ``--all``) — and at least one identifier and two tokens: ``x <- c(1, 2)``
and ``git commit -m "fix"`` are code lines; ``1 + 2``, ``ls()`` and ``x`` are not. A
line after a prompt (``$ ``, ``>>> ``, ``> ``, ``postgres=# ``) is code when an
identifier or an operator follows it: ``> x`` and ``>>> 2 + 2`` are, ``> 12`` is not.

Standard library only: the domain's import contract.
"""

from __future__ import annotations

import re

from citadel.domain.text import _WORD, STOPWORDS

STATEMENT_MIN_CONTENT_WORDS = 3
"""A sentence, for the ``verbatim`` label: "Git stores snapshots." has three content
words; "the working directory" and "version 2.7" have two and one."""
SHORT_STATEMENT_CONTENT_WORDS = 2
SHORT_STATEMENT_MIN_WORDS = 4
"""Or two content words among at least four words, numbers and stop words counted:
"The trial ran from 2001 to 2005" states something; "the working directory" does not."""
TITLE_MAX_WORDS = 6
"""A title or heading states nothing: a text that begins as one does (a capital letter,
or a heading's number or marker), does not end as a sentence does (``.``, ``!``,
``;``, ``…`` and their full-width forms; a colon ends a heading as often as not), has
at most this many words besides the marker and is no code line ("Recall and
correction of previous commands", "12.3. Class Groups and Units, bnf", "Installing
Git on Linux:"). A lower-case line such as ``git fetch origin`` is left to the other
rules; so, at the other end, is a heading of seven words or more. The cost of the
rule's mistakes is small: an unpunctuated six-word sentence ("The default port is
5432") is not ``verbatim``, and never ``supported`` or ``partial``
(``asserts_nothing``); a ``contradicted`` label it gets stays."""
_SENTENCE_END = re.compile(r"[.!;…。！；][\s\"')\]”’]*$")
_HEADING_MARKER = re.compile(
    r"\s*(?:\d+(?:\.\d+)+\.?|\d+\.|#{1,6}|\(\w{1,3}\)|\w{1,3}\)|§\s*[\d.]*\d)\s+"
)
"""A heading's number or marker (``2.6``, ``12.3.``, ``7.``, ``##``, ``(a)``, ``1)``,
``§ 3.2``), not counted among its words; a bare number ("2005 saw…") is none."""
_QUESTION_END = re.compile(r"[?？][\s\"')\]”’]*$")

_UNITS = (
    "%|percent|bytes?|bits?|[kmgtp]i?b|ms|us|ns|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?"
    "|hours?|days?|weeks?|months?|years?|[kmg]?hz|mm|cm|km|m|kg|g|mg|ml|l|px|pt|em|k|x"
    "|times|fold"
)
_NUMBER_WITH_UNIT = re.compile(
    rf"(?<![^\W_])[-+]?\d[\d.,]*(?:\s?(?:{_UNITS})(?![^\W_]))?", re.IGNORECASE
)
"""A number, with the unit right after it: neither is a content word."""

_CODE_MARK = re.compile(
    r"<<?-|->|:=|[=!<>]=|\|>|%[A-Za-z_]*%|::|&&|\|\|"  # operators
    r"|(?<![=<>!])=(?!=)"  # an assignment or a keyword argument
    r"|(?<![\w.])[A-Za-z_][\w.]*[(\[]"  # a call or an index: c(, x[, df.frame(
    r"|[{}]|;\s*$"  # braces, a statement's end
    r"|\$[A-Za-z_]"  # R's df$col, a shell's $HOME
    r"|(?:^|\s)--?[A-Za-z][\w-]*"  # a command-line option
    r"|\s[+*/<>]\s"  # arithmetic or a comparison between spaces
)
_PROMPT = re.compile(r"(?:\$|>>>|>|[\w-]*=[#>])\s+(?=\S)")
"""A shell, Python, R or psql prompt as the books print them (``$ ``, ``>>> ``, ``> ``,
``postgres=# ``)."""
_OPERATOR = re.compile(r"[-+*/%^<>=]")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|\"[^\"\n]*\"|'[^'\n]*'")


def content_words(text: str) -> list[str]:
    """The content words of ``text``, case-folded, in order (repeats kept)."""
    rest = _NUMBER_WITH_UNIT.sub(" ", text)
    return [
        word
        for word in (m.group(0).casefold() for m in _WORD.finditer(rest))
        if len(word) >= 2 and word[0].isalpha() and word not in STOPWORDS
    ]


def is_code_line(line: str) -> bool:
    """Whether one line reads as code: code punctuation, an identifier and two tokens; or
    a prompt followed by an identifier or an operator (``> x``, ``>>> 2 + 2``)."""
    line = line.strip()
    prompt = _PROMPT.match(line)
    if prompt is not None:
        body = line[prompt.end() :]
        return _IDENTIFIER.search(body) is not None or _OPERATOR.search(body) is not None
    if not line or _CODE_MARK.search(line) is None or _IDENTIFIER.search(line) is None:
        return False
    return len(_TOKEN.findall(line)) >= 2


def has_code_line(text: str) -> bool:
    return any(is_code_line(line) for line in text.splitlines())


def states_something(text: str) -> bool:
    """Validation's floor: a content word, or a code line (``12``, ``x``, ``the``,
    ``2 1.3`` and ``50 MB`` state nothing)."""
    return bool(content_words(text)) or has_code_line(text)


def is_question(text: str) -> bool:
    """A text that ends as a question does, and is no code line: it asks, so no passage
    supports or contradicts it (a small model echoes the reader's question back)."""
    return bool(_QUESTION_END.search(text)) and not has_code_line(text)


def is_title(text: str) -> bool:
    """A title or heading (``TITLE_MAX_WORDS``), and no code line: it names a subject and
    says nothing of it ("Using the Python Interpreter", "2.1. Invoking the Interpreter")."""
    if _SENTENCE_END.search(text) or _QUESTION_END.search(text):
        return False
    marked = _HEADING_MARKER.match(text)
    title = text[marked.end() :] if marked else text.lstrip()
    if not (marked or title[:1].isupper()) or len(_WORD.findall(title)) > TITLE_MAX_WORDS:
        return False
    return not has_code_line(text)


def asserts_nothing(text: str) -> bool:
    """A question or a title: nothing a passage could support or contradict, whatever
    words they share (a small model echoes the reader's question, or a heading)."""
    return is_question(text) or is_title(text)


def is_statement(text: str) -> bool:
    """What a quotation must be to be ``verbatim``: a sentence (``STATEMENT_MIN_CONTENT_WORDS``
    content words, or ``SHORT_STATEMENT_CONTENT_WORDS`` among ``SHORT_STATEMENT_MIN_WORDS``
    words; unpunctuated, more than ``TITLE_MAX_WORDS`` words) or a code line."""
    if _QUESTION_END.search(text):
        return has_code_line(text)  # a question asks; it states nothing
    if is_title(text):
        return False
    content = len(content_words(text))
    if content >= STATEMENT_MIN_CONTENT_WORDS:
        return True
    if content >= SHORT_STATEMENT_CONTENT_WORDS and len(_WORD.findall(text)) >= (
        SHORT_STATEMENT_MIN_WORDS
    ):
        return True
    return has_code_line(text)
