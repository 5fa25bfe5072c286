"""Whether a cited passage supports the sentence that cites it: the labels, the
score they come from, and what the application does with a segment no citation backs.

Support is checked separately from membership. Membership (the validator) proves
a citation names evidence the model saw; support asks whether that evidence says
what the sentence says. It is computed by the application from the segment's
text and the cited passage alone, never from anything the model says of itself.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from citadel.domain.errors import InvalidValue


class SupportLabel(enum.StrEnum):
    """What the reader is told beside a footnote, strongest first."""

    VERBATIM = "verbatim"
    """The sentence is a quotation of the passage (whitespace aside)."""
    SUPPORTED = "supported"
    """The passage says what the sentence says, in other words."""
    PARTIAL = "partial"
    """The passage backs part of the sentence; the rest is not in it."""
    UNSUPPORTED = "unsupported"
    """The passage does not back the sentence."""
    CONTRADICTED = "contradicted"
    """The passage says otherwise: it backs the opposite of the sentence."""


LABEL_ORDER: tuple[SupportLabel, ...] = tuple(SupportLabel)
"""Strongest first; ``contradicted`` is the weakest (worse than a passage that says
nothing of it). A segment's label is the strongest of its citations' labels, except
that a contradiction vetoes (``strongest``)."""

NOT_BACKED = frozenset({SupportLabel.UNSUPPORTED, SupportLabel.CONTRADICTED})

NOT_JUDGED = frozenset({SupportLabel.VERBATIM, SupportLabel.CONTRADICTED})
"""Local labels a span-support judge is never asked about: a quotation is verbatim by
construction, and a contradiction cannot be raised."""
"""The segment labels the ``drop`` and ``refuse`` policies act on."""


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """What a separate span-support judge (a language model) said of one citation,
    and which model said it: recorded beside the label it may have lowered."""

    model: str
    label: SupportLabel

    def __post_init__(self) -> None:
        if not self.model:
            raise InvalidValue("a judge's verdict names its model")
        if self.label is SupportLabel.VERBATIM:
            raise InvalidValue("a judge does not rule on quotations")


@dataclass(frozen=True, slots=True)
class Support:
    """One citation's support: a score in [0, 1], its label, for a quotation the
    exact character span ``[start, end)`` it occupies in the cited passage, and the
    span-support judge's verdict where one was asked."""

    score: float
    label: SupportLabel
    span: tuple[int, int] | None = None
    judged: JudgeVerdict | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:
            raise InvalidValue(f"a support score lies in [0, 1], got {self.score}")
        if (self.span is not None) != (self.label is SupportLabel.VERBATIM):
            raise InvalidValue("a span is given exactly when the label is verbatim")
        if self.span is not None and not 0 <= self.span[0] < self.span[1]:
            raise InvalidValue(f"a quotation's span is a non-empty range, got {self.span}")


def weaker(first: SupportLabel, second: SupportLabel) -> SupportLabel:
    """The less backed of two labels (``contradicted`` the least)."""
    return max(first, second, key=LABEL_ORDER.index)


def unjudged(supports: Iterable[Support]) -> bool:
    """Whether any of ``supports`` is one a judge should have ruled on but did not."""
    return any(s.judged is None and s.label not in NOT_JUDGED for s in supports)


def with_judge(local: Support, verdict: JudgeVerdict) -> Support:
    """The local check's support after the judge's verdict: the judge can lower the
    label, never raise it, so a ``contradicted`` stays ``contradicted``. The score
    is the local checker's (the judge gives none); a quotation is never judged."""
    if local.label is SupportLabel.VERBATIM:
        raise InvalidValue("a quotation is verbatim by construction; it is not judged")
    return Support(local.score, weaker(local.label, verdict.label), None, verdict)


def strongest(labels: list[SupportLabel] | tuple[SupportLabel, ...]) -> SupportLabel:
    """A segment's label from its citations' labels: ``contradicted`` when any citation
    contradicts it, else the best-backed of them (``unsupported`` when none).

    A contradiction is a veto, not a weak vote: a segment citing one passage that
    supports it (or that it quotes) and one that says otherwise is ``contradicted``.
    The reader who follows the second footnote finds the opposite, and a citation
    that contradicts must never be hidden behind one that supports."""
    if SupportLabel.CONTRADICTED in labels:
        return SupportLabel.CONTRADICTED
    return min(labels, key=LABEL_ORDER.index, default=SupportLabel.UNSUPPORTED)


class SupportPolicy(enum.StrEnum):
    """What an answer does with a segment no citation supports, or one a citation
    contradicts (a segment labelled ``unsupported`` or ``contradicted``: ``NOT_BACKED``)."""

    LABEL = "label"
    """Show every segment, each with its label."""
    DROP = "drop"
    """Remove unsupported and contradicted segments; the answer is marked limited."""
    REFUSE = "refuse"
    """Any unsupported or contradicted segment degrades the whole answer (reason
    ``unsupported``)."""
