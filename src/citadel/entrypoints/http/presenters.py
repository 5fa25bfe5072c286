"""What the pages show, prepared from domain results: footnotes, link states, passages.

Everything here is plain text; the templates escape it. Hrefs come only from
the resolver, and only the two shapes it makes are rendered as links.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from citadel.domain.answer import AnswerResult, Citation, DegradedReason, LinkState
from citadel.domain.document import Chunk
from citadel.domain.search import Evidence
from citadel.domain.source import Source
from citadel.domain.users import Actor, Role
from citadel.entrypoints.present.blocks import Block, code_ranges, lead, passage_blocks
from citadel.entrypoints.present.evidence_list import (
    citation_key,
    evidence_list,
    footnote_numbers,
)
from citadel.entrypoints.present.labels import (
    LIMITED_NOTE,
    NOT_IN_LIBRARY_NOTE,
    chapter_label,
    footnote,
    pages_label,
    support_mark,
)
from citadel.entrypoints.present.shapes import source_json

SERVER_DETAILS = ("origin",)
"""Source fields that describe the server, not the source: the path it was read from."""


def source_view(source: Source, actor: Actor) -> dict[str, Any]:
    """A source as ``source_json`` has it, for ``actor``: what identifies the source
    to a reader (id, title, authors, version, ACL, canonical URL). Where the server read
    it from is for admins only, who run the server; readers and librarians work with
    source ids and titles (an upload's path is a spool file, gone once it is ingested)."""
    out = source_json(source)
    if actor.role is not Role.ADMIN:
        for name in SERVER_DETAILS:
            out.pop(name, None)
    return out


DEGRADED_WORDS = {
    DegradedReason.NO_EVIDENCE: (
        "No passage in the library matched the question well enough to answer from."
    ),
    DegradedReason.GENERATOR_ERROR: (
        "The answer writer failed, so there is no written answer; the passages below are"
        " what it would have used."
    ),
    DegradedReason.GENERATOR_TIMEOUT: (
        "The answer writer took too long, so there is no written answer; the passages below"
        " are what it would have used."
    ),
    DegradedReason.GENERATOR_BUSY: (
        "Too many answers are being written right now; try again in a moment. Meanwhile,"
        " here are the passages."
    ),
    DegradedReason.INVALID_OUTPUT: (
        "The written answer could not be checked against its sources, so it is not shown;"
        " here are the passages instead."
    ),
    DegradedReason.UNSUPPORTED: (
        "The written answer said things its cited passages do not support (or contradict),"
        " so it is not shown; here are the passages instead."
    ),
    DegradedReason.NOT_IN_LIBRARY: NOT_IN_LIBRARY_NOTE,
}

SUPPORT_WORDS = {
    "verbatim": "quoted from the passage",
    "supported": "the passage supports this",
    "partial": "the passage supports part of this",
    "unsupported": "the passage does not support this",
    "contradicted": "the passage says otherwise",
}
"""The title of each support label beside a footnote mark."""

LINK_WORDS = {
    LinkState.CANONICAL: "open the source",
    LinkState.VIEWER: "view the passage",
    LinkState.SUPERSEDED: "the source has changed since this answer",
    LinkState.UNAVAILABLE: "no link available",
    LinkState.FORBIDDEN: "you may not see this source",
    LinkState.DELETED: "this source has been deleted",
}


@dataclass(frozen=True, slots=True)
class Footnote:
    number: int
    where: str
    state: str
    label: str
    href: str | None
    """The footnote's route (``footnote_href``) when the resolver gave a link, else None."""
    external: bool
    support: str = ""
    """The support label of the first segment citing it (``verbatim``…), or empty."""

    @property
    def support_title(self) -> str:
        return SUPPORT_WORDS.get(self.support, "")


def footnote_href(answer_id: str, ref: str, back: str = "") -> str:
    """The route a footnote opens: it resolves the citation again for the reader when
    clicked and redirects to a freshly signed link, so it never expires on the page.
    ``back``, the answer's permalink, rides along to the viewer's way back."""
    href = f"/answers/{quote(answer_id, safe='')}/citations/{quote(ref, safe='')}"
    return href + ("?" + urlencode({"back": back}) if back else "")


@dataclass(frozen=True, slots=True)
class Mark:
    """A footnote mark after a segment, with the support of that citation."""

    number: int
    support: str
    """The support label (``verbatim``…), or empty where none was checked."""

    @property
    def support_title(self) -> str:
        return SUPPORT_WORDS.get(self.support, "")


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    notes: tuple[Mark, ...]

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The segment as prose and code (a quoted code line or block keeps its lines)."""
        return passage_blocks(self.text)

    @property
    def code(self) -> bool:
        """The segment quotes code: shown as blocks, with its line breaks."""
        return any(block.code for block in self.blocks)


@dataclass(frozen=True, slots=True)
class Passage:
    rank: int
    where: str
    score: str
    text: str
    blocks: tuple[Block, ...] = ()
    """The text as prose paragraphs and code blocks (``passage_blocks``)."""
    lead: str = ""
    """The first words, shown while the passage is collapsed."""
    number: int = 0
    """In the evidence list: the footnote's number when cited, else after the footnotes."""
    cited: bool = False
    href: str | None = None
    """A footnote's route (``footnote_href``), as ``listed_passages`` gives it; or None."""
    external: bool = False
    label: str = ""
    """The link's words, or why there is no link."""


@dataclass(frozen=True, slots=True)
class AnswerView:
    answer_id: str
    query: str
    sentences: tuple[Sentence, ...]
    footnotes: tuple[Footnote, ...]
    degraded: str | None
    degraded_code: str | None
    passages: tuple[Passage, ...]
    limited: str | None = None
    closest: bool = False
    """The passages are the closest ones found, not an answer's evidence (``not_in_library``)."""


def safe_href(citation: Citation) -> tuple[str | None, bool]:
    """The resolver's href when it has one of the shapes the resolver makes, and whether
    it leaves the site; anything else is not rendered as a link."""
    href = citation.link_href
    if not href:
        return None, False
    if citation.link_state is LinkState.CANONICAL and href.startswith("https://"):
        return href, True
    viewer = citation.link_state in (LinkState.VIEWER, LinkState.SUPERSEDED)
    if viewer and href.startswith("/v1/sources/"):
        return href, False
    return None, False


def where(citation: Citation) -> str:
    if citation.link_state is LinkState.FORBIDDEN:
        return "A source you may not see"
    return footnote(0, citation).removeprefix("[0] ")


def answer_view(result: AnswerResult, back: str = "") -> AnswerView:
    sentences: list[Sentence] = []
    footnotes: list[Footnote] = []
    numbers = footnote_numbers(result.answer)
    if result.answer is not None:
        for segment in result.answer.segments:
            marks: list[Mark] = []
            for citation in segment.citations:
                number = numbers[citation_key(citation)]
                if len(footnotes) < number:
                    href, external = safe_href(citation)
                    footnotes.append(
                        Footnote(
                            number=number,
                            where=where(citation),
                            state=citation.link_state.value,
                            label=LINK_WORDS[citation.link_state],
                            href=footnote_href(result.answer_id, citation.ref, back)
                            if href
                            else None,
                            external=external,
                            support=support_mark(citation),
                        )
                    )
                if all(m.number != number for m in marks):
                    marks.append(Mark(number, support_mark(citation)))
            sentences.append(Sentence(segment.text, tuple(marks)))
    degraded = result.degraded
    return AnswerView(
        answer_id=result.answer_id,
        query=result.search.query,
        sentences=tuple(sentences),
        footnotes=tuple(footnotes),
        degraded=DEGRADED_WORDS.get(degraded.reason, degraded.detail) if degraded else None,
        degraded_code=degraded.reason.value if degraded else None,
        passages=listed_passages(result, footnotes, back),
        limited=LIMITED_NOTE if result.answer is not None and result.answer.limited else None,
        closest=closest_passages(result),
    )


def closest_passages(result: AnswerResult) -> bool:
    """Whether the answerability decision found that no passage answers the question."""
    degraded = result.degraded
    return degraded is not None and degraded.reason is DegradedReason.NOT_IN_LIBRARY


def passages(results: Sequence[Evidence]) -> tuple[Passage, ...]:
    """The search results as found, before there is an answer: numbered by rank."""
    return tuple(passage(e, rank) for rank, e in enumerate(results, start=1))


def listed_passages(
    result: AnswerResult, footnotes: Sequence[Footnote], back: str = ""
) -> tuple[Passage, ...]:
    """The evidence list beside an answer (``evidence_list``): a cited passage under its
    footnote's number, linked as the footnote is; the others numbered on, opened through
    the same route (resolved on the click) if the answer's manifest has them."""
    notes = {note.number: note for note in footnotes}
    shown: list[Passage] = []
    for p in evidence_list(result):
        note = notes.get(p.number) if p.cited else None
        link: dict[str, Any] = {}
        if note is not None:
            link = {"href": note.href, "external": note.external, "label": note.label}
        elif p.ref is not None:
            route = footnote_href(result.answer_id, p.ref, back)
            link = {"href": route, "label": LINK_WORDS[LinkState.VIEWER]}
        shown.append(passage(p.evidence, p.rank, number=p.number, cited=p.cited, **link))
    return tuple(shown)


def passage(e: Evidence, rank: int, **listed: Any) -> Passage:
    # A book without chapters has its title as the chapter: say it once.
    chapter = chapter_label(e.chapter) if e.chapter != e.title else ""
    return Passage(
        rank=rank,
        where=", ".join(p for p in (e.title, chapter, pages_label(e.pages)) if p),
        score=f"{e.score:.2f}",
        text=e.passage,
        blocks=passage_blocks(e.passage),
        lead=lead(e.passage),
        **{"number": rank, **listed},
    )


@dataclass(frozen=True, slots=True)
class Span:
    text: str
    cited: bool
    code: bool = False
    """Part of a stretch of code lines (``with_code``): set in monospace."""
    anchor: bool = False
    """The first cited span: where ``#cited`` scrolls to."""


def with_code(spans: Sequence[Span]) -> list[Span]:
    """``spans`` cut where code lines start and end (``code_ranges``), each piece saying
    whether it is code; the first cited piece is the anchor."""
    text = "".join(span.text for span in spans)
    ranges = code_ranges(text)
    cuts = sorted({0, len(text), *(edge for r in ranges for edge in r)})
    out: list[Span] = []
    offset = 0
    for span in spans:
        lo, hi = offset, offset + len(span.text)
        edges = [lo, *(c for c in cuts if lo < c < hi), hi]
        for a, b in itertools.pairwise(edges):
            if a == b:
                continue
            code = any(start <= a and b <= end for start, end in ranges)
            anchor = span.cited and not any(o.cited for o in out)
            out.append(Span(text[a:b], span.cited, code=code, anchor=anchor))
        offset = hi
    return out


def viewer_spans(
    chunks: Sequence[Chunk],
    cited_id: str,
    context: int = 3,
    span: tuple[int, int] | None = None,
) -> list[Span] | None:
    """The cited chunk with ``context`` chunks either side, overlaps merged, as spans of
    plain and cited text; None when the chunk is not in this version.

    ``span``, a quotation's ``[start, end)`` in the cited chunk's text, narrows what is
    marked cited to the quoted words; one that does not fit the chunk marks it whole."""
    index = next((i for i, c in enumerate(chunks) if c.chunk_id == cited_id), None)
    if index is None:
        return None
    cited = chunks[index]
    if span is not None and not 0 <= span[0] < span[1] <= len(cited.text):
        span = None
    # What is marked, in the version's text: the quotation, or the whole cited chunk.
    lo, hi = cited.char_start, cited.char_end
    if span is not None and _exact(cited):
        lo, hi = cited.char_start + span[0], cited.char_start + span[1]
    window = chunks[max(0, index - context) : index + context + 1]
    spans: list[Span] = []
    end = -1
    for chunk in window:
        start = chunk.char_start
        text = chunk.text
        exact = _exact(chunk)
        if end >= 0 and start > end:
            spans.append(Span("\n\n", cited=False))
        if exact and start < end:
            # Overlapping chunks repeat text: keep only what this one adds.
            text, start = text[end - start :], end
        if not text:
            continue
        if exact:
            spans.extend(_split(text, start, lo, hi))
        elif chunk is cited and span is not None:
            a, b = span
            spans.extend((Span(text[:a], False), Span(text[a:b], True), Span(text[b:], False)))
        else:
            spans.append(Span(text, cited=chunk is cited))
        end = max(end, start + len(text) if exact else chunk.char_end)
    return _merge(spans)


def _exact(chunk: Chunk) -> bool:
    """The chunk's text is its range of the version's text, character for character."""
    return len(chunk.text) == chunk.char_end - chunk.char_start


def _split(text: str, start: int, lo: int, hi: int) -> list[Span]:
    """Text at ``start`` in the version, with its part inside ``[lo, hi)`` marked cited."""
    a = min(max(lo - start, 0), len(text))
    b = min(max(hi - start, 0), len(text))
    if a >= b:
        return [Span(text, cited=False)]
    return [Span(text[:a], False), Span(text[a:b], True), Span(text[b:], False)]


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for span in spans:
        if not span.text:
            continue
        if merged and merged[-1].cited == span.cited:
            merged[-1] = Span(merged[-1].text + span.text, span.cited)
        else:
            merged.append(span)
    return merged


def sections_json(chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """A version's sections in reading order: consecutive chunks under one heading path
    are one section, with its first chunk, chunk count and the pages it spans."""
    sections: list[dict[str, Any]] = []
    for chunk in chunks:
        path = list(chunk.section_path)
        if sections and sections[-1]["section_path"] == path:
            last = sections[-1]
            last["chunks"] += 1
            last["page_end"] = chunk.page_end or last["page_end"]
            last["page_label_end"] = chunk.page_label_end or last["page_label_end"]
            last["page_start"] = last["page_start"] or chunk.page_start
            last["page_label_start"] = last["page_label_start"] or chunk.page_label_start
            continue
        sections.append(
            {
                "section_path": path,
                "chapter": chunk.chapter,
                "section": chunk.section,
                "chunks": 1,
                "first_chunk_id": chunk.chunk_id,
                "page_start": chunk.page_start,
                "page_end": chunk.page_end,
                "page_label_start": chunk.page_label_start,
                "page_label_end": chunk.page_label_end,
            }
        )
    return sections
