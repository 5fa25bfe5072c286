"""How a follow-up question becomes the search query it runs: as asked, rewritten by a
fixed rule, or rewritten by a model.

A follow-up such as "and its default?" finds nothing on its own: the words that
name the subject were in the earlier turn. The deterministic rule (``follow_up``)
adds the salient terms of the previous turn — its search query first, then the
words its answer used most — when the follow-up is short or leans on a pronoun;
a question that stands alone runs as asked. The rewrite only ever changes the
query's text: the search still runs as the same actor with the same filters, so
it can never reach more than the question asked as written could.
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from dataclasses import dataclass

from citadel.domain.errors import InvalidValue

MAX_QUERY_CHARS = 2000
SHORT_FOLLOW_UP = 6
"""A follow-up of at most this many content words borrows the previous turn's terms."""
QUERY_TERMS = 6
ANSWER_TERMS = 3

_WORD = re.compile(r"[^\W_][\w+#.-]*[\w+#]|[^\W_]", re.UNICODE)
_STOP = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having here how i if in into is it its itself just me more
    most my no nor not now of off on once only or other our out over own same she should
    so some such than that the their theirs them then there these they this those through
    to too under until up very was we were what when where which while who whom why will
    with would you your yours he him his her hers us use used using one get gets like
    instead else another way ways example tell show explain mean means""".split()
)
_LEANING = frozenset(
    """it its it's they them their theirs this that these those he she him her his one ones
    there then same such also and but so or else instead another""".split()
)
"""Words that, opening a question or standing in it, point back at the conversation."""
_OPENINGS = ("what about", "how about", "what if", "why not", "and ")


class RewriteKind(enum.StrEnum):
    NONE = "none"
    """The question ran as asked (a first question, or one that stands alone)."""
    DETERMINISTIC = "deterministic"
    """The fixed rule added the previous turn's salient terms."""
    MODEL = "model"
    """The configured model wrote a standalone query from the conversation."""


@dataclass(frozen=True, slots=True)
class QueryRewrite:
    """What a turn searched for, and how that came from what was asked."""

    question: str
    query: str
    kind: RewriteKind = RewriteKind.NONE

    def __post_init__(self) -> None:
        if not self.query.strip() or len(self.query) > MAX_QUERY_CHARS:
            raise InvalidValue(f"a search query has 1 to {MAX_QUERY_CHARS} characters")

    @property
    def rewritten(self) -> bool:
        return self.kind is not RewriteKind.NONE and self.query != self.question

    @classmethod
    def as_asked(cls, question: str) -> QueryRewrite:
        return cls(question, question, RewriteKind.NONE)


@dataclass(frozen=True, slots=True)
class PreviousTurn:
    """What a rewrite may draw on: the last turn's question, query and answer text."""

    question: str
    query: str
    answer_text: str = ""


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def _content(text: str) -> list[str]:
    return [w for w in words(text) if w.casefold() not in _STOP and len(w) > 1]


def leans_on_context(question: str) -> bool:
    """Whether ``question`` needs the conversation: short, or pointing back with a pronoun."""
    found = [w.casefold() for w in words(question)]
    if not found:
        return False
    opening = " ".join(found[:2])
    if found[0] in _LEANING or opening.startswith(_OPENINGS):
        return True
    if len(_content(question)) <= SHORT_FOLLOW_UP // 2:
        return True
    return len(_content(question)) <= SHORT_FOLLOW_UP and any(w in _LEANING for w in found)


def salient_terms(previous: PreviousTurn, exclude: str = "") -> list[str]:
    """The previous turn's query terms (in order), then its answer's most used words."""
    seen = {w.casefold() for w in words(exclude)}
    terms: list[str] = []
    for word in _content(previous.query or previous.question):
        if word.casefold() not in seen and len(terms) < QUERY_TERMS:
            seen.add(word.casefold())
            terms.append(word)
    counts = Counter(w.casefold() for w in _content(previous.answer_text))
    first: dict[str, str] = {}
    for word in _content(previous.answer_text):
        first.setdefault(word.casefold(), word)
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    extra = [first[w] for w in ranked if w not in seen and counts[w] > 1][:ANSWER_TERMS]
    return terms + extra


def follow_up(question: str, previous: PreviousTurn | None) -> QueryRewrite:
    """The deterministic rewrite of ``question`` after ``previous`` (see the module)."""
    question = question.strip()
    if previous is None or not leans_on_context(question):
        return QueryRewrite.as_asked(question)
    terms = salient_terms(previous, exclude=question)
    if not terms:
        return QueryRewrite.as_asked(question)
    query = f"{question} {' '.join(terms)}"[:MAX_QUERY_CHARS]
    return QueryRewrite(question, query, RewriteKind.DETERMINISTIC)
