"""Questions to suggest on the home page, drawn from the library's own headings.

Deterministic and plain: a heading loses its numbering ("4.1.", "Chapter 2.",
"Subsection LA:"), front and back matter ("Contents", "Index", "Preface", …) and
headings that are only numbers are skipped, and what is left becomes a question
by its form — "How to get a repository" asks "How do I get a repository?", a
heading that is a question is asked as it is, a gerund ("Manipulating branches")
asks how it works, anything else asks what it is. Headings are preferred in that
order (a gerund last: "Rolling restarts" may be a noun); within a book, picks
are spread over its reading order, and the books take turns, so one long book
does not fill the list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

MAX_SUGGESTIONS = 6
MAX_WORDS = 9
MAX_CHARS = 70

_NUMBERING = re.compile(
    r"^(?:(?i:chapter|part|section|subsection|appendix|lesson|unit)\s+[A-Z0-9][A-Z0-9.]*[.:]?\s+"
    r"|\d+(?:\.\d+)*\.?\)?\s+"
    r"|[A-Z](?:\.\d+)+\.?\s+"
    r"|[IVXLC]+\.\s+"
    r"|[A-Z]{1,6}:\s+)"
)
_LETTERS = re.compile(r"[^\W\d_]")
JUNK = frozenset(
    {
        "about this book",
        "about this document",
        "about the author",
        "abstract",
        "acknowledgements",
        "acknowledgments",
        "afterword",
        "appendices",
        "appendix",
        "author biography",
        "back matter",
        "bibliography",
        "colophon",
        "contents",
        "copyright",
        "cover",
        "dedication",
        "edition",
        "epigraph",
        "errata",
        "exercises",
        "footnotes",
        "foreword",
        "front matter",
        "further reading",
        "glossary",
        "index",
        "introduction",
        "legal notice",
        "licence",
        "license",
        "list of figures",
        "list of tables",
        "notes",
        "preface",
        "publisher",
        "references",
        "see also",
        "solutions",
        "summary",
        "table of contents",
        "title page",
    }
)
_JUNK_WORDS = ("index", "copyright", "acronyms", "license", "licence")
_ASKING = frozenset({"how", "what", "why", "when", "where", "which", "who", "can", "does"})


def clean_heading(heading: str) -> str:
    """``heading`` without its numbering and trailing punctuation; "" when what is left is
    not worth asking about (junk, numbers only, too short or too long)."""
    text = " ".join(heading.split())
    for _ in range(3):  # "Chapter 1. Chapter SLE Systems …": numbering can repeat
        stripped = _NUMBERING.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    text = text.strip(" .:;,-–—")
    folded = text.casefold()
    words = folded.split()
    if len(_LETTERS.findall(text)) < 4 or len(words) > MAX_WORDS or len(text) > MAX_CHARS:
        return ""
    if folded in JUNK or any(w.strip("().,:") in _JUNK_WORDS for w in words):
        return ""
    if words[0] in JUNK and len(words) <= 3:  # "Introduction and preliminaries"
        return ""
    return text


def question_for(heading: str) -> tuple[int, str]:
    """The question a cleaned heading asks, and its rank (0 reads best; "" for none)."""
    if ":" in heading:
        head, _, tail = heading.partition(":")
        if tail.strip().endswith("?"):
            return question_for(tail.strip())
        heading = head.strip() if len(head.split()) >= 2 else heading
    first, _, rest = heading.partition(" ")
    word = first.casefold()
    if heading.endswith("?"):
        return (0, heading) if len(heading.split()) >= 3 else (9, "")
    if word == "how" and rest.casefold().startswith("to ") and len(rest) > 3:
        return 0, f"How do I {rest[3:]}?"
    if word in _ASKING:
        return 1, f"{heading}?"
    if word.endswith("ing") and len(word) > 5 and rest:
        return 3, f"How does {word}{' ' + rest} work?"
    if word in ("the", "a", "an") and rest:
        heading = f"{word} {rest}"  # "What is the R environment?"
    last = heading.split()[-1].casefold()
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is", "'s"))
    return 2, f"What {'are' if plural else 'is'} {heading}?"


def _spread(items: Sequence[str], wanted: int) -> list[str]:
    """Up to ``wanted`` of ``items``, evenly spaced over them, in their order."""
    if len(items) <= wanted:
        return list(items)
    return [items[i * len(items) // wanted] for i in range(wanted)]


def book_questions(headings: Iterable[str], title: str, wanted: int) -> list[str]:
    """A book's best questions, spread over its reading order (the best rank first)."""
    whole = title.casefold()
    ranked: dict[int, list[str]] = {}
    seen: set[str] = set()
    for heading in headings:
        cleaned = clean_heading(heading)
        # The book's own title (or its start, "The Python Tutorial — Python 3.11 …").
        if not cleaned or whole.startswith(cleaned.casefold()):
            continue
        rank, question = question_for(cleaned)
        if not question or question.casefold() in seen:
            continue
        seen.add(question.casefold())
        ranked.setdefault(rank, []).append(question)
    picked: list[str] = []
    for rank in sorted(ranked):
        picked += _spread(ranked[rank], wanted - len(picked))
        if len(picked) >= wanted:
            break
    return picked


def suggested_questions(
    books: Sequence[tuple[str, Sequence[str]]], limit: int = MAX_SUGGESTIONS
) -> list[str]:
    """Up to ``limit`` questions over ``books`` (each its title and headings in reading
    order), the books taking turns; the same library always gives the same list."""
    per_book = [book_questions(headings, title, limit) for title, headings in books]
    chosen: list[str] = []
    seen: set[str] = set()
    for turn in range(limit):
        for questions in per_book:
            if turn < len(questions) and questions[turn].casefold() not in seen:
                seen.add(questions[turn].casefold())
                chosen.append(questions[turn])
                if len(chosen) == limit:
                    return chosen
    return chosen
