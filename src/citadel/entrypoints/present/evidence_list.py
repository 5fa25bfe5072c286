"""The evidence list beside an answer, numbered as its footnotes are.

Footnotes are numbered in the order the answer first cites each passage: ``[1]`` is
the first passage cited, whichever search result it was. The evidence list uses the
same numbers: the passages the answer cites come first, each under its footnote's
number and marked cited; the search results it does not cite follow as further
passages, in search order, numbered on from the last footnote. Two segments citing
one passage share its number. The terminal, the web UI and the JSON shapes all take
their numbers from here, so they cannot disagree.

A citation the resolver made ``forbidden`` (the reader may no longer see its source)
keeps its footnote, which says only that; its passage is left out of the list, as
the resolver leaves out everything else about the source.
"""

from __future__ import annotations

from dataclasses import dataclass

from citadel.domain.answer import AnswerResult, Citation, GroundedAnswer, LinkState
from citadel.domain.search import Evidence


def citation_key(citation: Citation) -> str:
    """What one footnote stands for: the cited passage (a forbidden citation, which
    carries no ids, gets a footnote of its own)."""
    return citation.evidence_id or f"forbidden-{citation.ref}"


def footnote_numbers(answer: GroundedAnswer | None) -> dict[str, int]:
    """Each cited passage's footnote number (by ``citation_key``), in first-citation order."""
    numbers: dict[str, int] = {}
    for segment in answer.segments if answer is not None else ():
        for citation in segment.citations:
            numbers.setdefault(citation_key(citation), len(numbers) + 1)
    return numbers


@dataclass(frozen=True, slots=True)
class ListedPassage:
    """One search result as the evidence list shows it."""

    number: int
    """Its number in the list: the footnote's when the answer cites it."""
    rank: int
    """Its place in the search results, from 1."""
    evidence: Evidence
    citation: Citation | None
    """The answer's first citation of it, resolved for the reader; None when uncited."""
    ref: str | None
    """Its ref in the answer's manifest (``E1``…), when it was among the passages the
    answer was written from; None otherwise."""

    @property
    def cited(self) -> bool:
        return self.citation is not None

    @property
    def footnote(self) -> int | None:
        return self.number if self.citation is not None else None


def evidence_list(result: AnswerResult) -> tuple[ListedPassage, ...]:
    """The search results of ``result``: cited ones first under their footnote numbers,
    then the rest in search order (see the module's docstring)."""
    numbers = footnote_numbers(result.answer)
    first: dict[str, Citation] = {}
    forbidden_refs: set[str] = set()
    for segment in result.answer.segments if result.answer is not None else ():
        for citation in segment.citations:
            if citation.link_state is LinkState.FORBIDDEN:
                forbidden_refs.add(citation.ref)
            else:
                first.setdefault(citation.evidence_id, citation)
    refs: dict[str, str] = {}
    hidden: set[str] = set()
    if result.manifest is not None:
        for entry in result.manifest.entries:
            refs[entry.evidence_id] = entry.ref
            if entry.ref in forbidden_refs:
                hidden.add(entry.evidence_id)
    for citation in first.values():
        refs.setdefault(citation.evidence_id, citation.ref)
    cited: list[ListedPassage] = []
    further: list[Evidence] = []
    ranks: dict[str, int] = {}
    for rank, evidence in enumerate(result.search.results, start=1):
        key = evidence.evidence_id
        if key in hidden or key in ranks:
            continue
        ranks[key] = rank
        cites = first.get(key)
        if cites is None:
            further.append(evidence)
            continue
        cited.append(ListedPassage(numbers[key], rank, evidence, cites, refs.get(key)))
    cited.sort(key=lambda p: p.number)
    after = max(numbers.values(), default=0)
    return (
        *cited,
        *(
            ListedPassage(after + i, ranks[e.evidence_id], e, None, refs.get(e.evidence_id))
            for i, e in enumerate(further, start=1)
        ),
    )
