"""Atomic validation of a generator's candidate against the frozen manifest.

A candidate is any decoded JSON value. It becomes an answer only when every
segment passes every check; one failure rejects the whole candidate with a
typed reason. Validation never raises on input, whatever its shape.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from citadel.domain.answer import AnswerSegment
from citadel.domain.limits import Limits
from citadel.domain.manifest import Manifest
from citadel.domain.quotation import is_literal_quotation
from citadel.domain.renderable import Renderable, renderable_form
from citadel.domain.statement import states_something
from citadel.domain.text import (
    forbidden_character,
    is_valid_utf8,
    utf8_size,
)


class RejectionReason(enum.StrEnum):
    NOT_AN_OBJECT = "not_an_object"
    UNKNOWN_FIELD = "unknown_field"
    SEGMENTS_NOT_A_LIST = "segments_not_a_list"
    NO_SEGMENTS = "no_segments"
    TOO_MANY_SEGMENTS = "too_many_segments"
    SEGMENT_NOT_AN_OBJECT = "segment_not_an_object"
    TEXT_NOT_A_STRING = "text_not_a_string"
    EMPTY_TEXT = "empty_text"
    SEGMENT_TOO_LONG = "segment_too_long"
    INVALID_UTF8 = "invalid_utf8"
    CONTROL_CHARACTER = "control_character"
    FORMAT_CHARACTER = "format_character"
    URL_IN_TEXT = "url_in_text"
    MARKUP_IN_TEXT = "markup_in_text"
    CITATIONS_NOT_A_LIST = "citations_not_a_list"
    NO_CITATIONS = "no_citations"
    TOO_MANY_CITATIONS = "too_many_citations"
    REF_NOT_A_STRING = "ref_not_a_string"
    UNKNOWN_REF = "unknown_ref"
    DUPLICATE_REF = "duplicate_ref"
    ANSWER_TOO_LONG = "answer_too_long"
    NO_WORDS = "no_words"
    """The text has no letter or digit ("...", "—"): it says nothing a passage could support."""
    STATES_NOTHING = "states_nothing"
    """The text has words but states nothing: no content word and no code line — numbers
    alone ("12", "2 1.3", "50 MB"), stop words ("the"), a letter ("x")
    (``statement.states_something``)."""
    REPEATED_SEGMENT = "repeated_segment"
    """A segment says what an earlier one said (case, spacing and punctuation aside)."""


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: RejectionReason
    detail: str
    segment: int | None = None


@dataclass(frozen=True, slots=True)
class Accepted:
    segments: tuple[AnswerSegment, ...]


Verdict = Accepted | Rejection

_SEGMENT_FIELDS = frozenset({"text", "evidence_ids"})


def validate_candidate(
    payload: object,
    manifest: Manifest,
    limits: Limits,
    passages: Mapping[str, str] | None = None,
) -> Verdict:
    """Accept the whole candidate or reject it with the first reason found.

    ``passages`` (by ref) are what a segment may quote verbatim; by default the
    manifest's own evidence (a manifest read back from the audit log has none)."""
    if passages is None:
        passages = {
            entry.ref: ctx.passage
            for entry, ctx in zip(manifest.entries, manifest.evidence, strict=False)
        }
    if not isinstance(payload, dict):
        return Rejection(RejectionReason.NOT_AN_OBJECT, f"expected an object, got {_kind(payload)}")
    extra = set(payload) - {"segments"}
    if extra:
        return Rejection(RejectionReason.UNKNOWN_FIELD, f"unexpected field(s): {_names(extra)}")
    raw_segments = payload.get("segments")
    if not isinstance(raw_segments, list):
        return Rejection(RejectionReason.SEGMENTS_NOT_A_LIST, f"segments is {_kind(raw_segments)}")
    if not raw_segments:
        return Rejection(RejectionReason.NO_SEGMENTS, "the answer has no segments")
    if len(raw_segments) > limits.max_segments:
        return Rejection(
            RejectionReason.TOO_MANY_SEGMENTS,
            f"{len(raw_segments)} segments, at most {limits.max_segments} allowed",
        )
    allowed = manifest.refs()
    segments: list[AnswerSegment] = []
    said: dict[str, int] = {}
    total = 0
    for index, raw in enumerate(raw_segments):
        verdict = _segment(raw, allowed, limits, passages)
        if isinstance(verdict, Rejection):
            return Rejection(verdict.reason, verdict.detail, segment=index)
        words = _wording(verdict.text)
        if not words:
            return Rejection(RejectionReason.NO_WORDS, "text has no words", segment=index)
        if not states_something(verdict.text):
            return Rejection(
                RejectionReason.STATES_NOTHING,
                "text states nothing: no content word (only numbers, stop words or"
                " single letters) and no code line",
                segment=index,
            )
        if words in said:
            return Rejection(
                RejectionReason.REPEATED_SEGMENT,
                f"the text repeats segment {said[words] + 1}",
                segment=index,
            )
        said[words] = index
        total += utf8_size(verdict.text)
        if total > limits.max_answer_bytes:
            return Rejection(
                RejectionReason.ANSWER_TOO_LONG,
                f"answer text exceeds {limits.max_answer_bytes} bytes",
                segment=index,
            )
        segments.append(verdict)
    return Accepted(tuple(segments))


def _segment(
    raw: object, allowed: frozenset[str], limits: Limits, passages: Mapping[str, str]
) -> AnswerSegment | Rejection:
    if not isinstance(raw, dict):
        return Rejection(RejectionReason.SEGMENT_NOT_AN_OBJECT, f"segment is {_kind(raw)}")
    extra = set(raw) - _SEGMENT_FIELDS
    if extra:
        return Rejection(RejectionReason.UNKNOWN_FIELD, f"unexpected field(s): {_names(extra)}")
    text = raw.get("text")
    if not isinstance(text, str):
        return Rejection(RejectionReason.TEXT_NOT_A_STRING, f"text is {_kind(text)}")
    refs = raw.get("evidence_ids")
    text_problem = check_display_text(text, limits)
    if text_problem is not None and not (
        text_problem.reason in RENDERABLE_REASONS and _quotes_a_cited_passage(text, refs, passages)
    ):
        return text_problem
    if not isinstance(refs, list):
        return Rejection(RejectionReason.CITATIONS_NOT_A_LIST, f"evidence_ids is {_kind(refs)}")
    if not refs:
        return Rejection(RejectionReason.NO_CITATIONS, "a segment cites no evidence")
    if len(refs) > limits.max_citations_per_segment:
        return Rejection(
            RejectionReason.TOO_MANY_CITATIONS,
            f"{len(refs)} citations, at most {limits.max_citations_per_segment} allowed",
        )
    seen: set[str] = set()
    for ref in refs:
        if not isinstance(ref, str):
            return Rejection(RejectionReason.REF_NOT_A_STRING, f"a ref is {_kind(ref)}")
        if ref not in allowed:
            return Rejection(
                RejectionReason.UNKNOWN_REF, f"ref {_quote(ref)} is not in the manifest"
            )
        if ref in seen:
            return Rejection(RejectionReason.DUPLICATE_REF, f"ref {ref} is cited twice")
        seen.add(ref)
    return AnswerSegment(text=text.strip(), refs=tuple(refs))


def _quotes_a_cited_passage(text: str, refs: object, passages: Mapping[str, str]) -> bool:
    """Whether ``text`` is a literal quotation of a passage it cites: the library's text
    then, not the model's (``is_literal_quotation``: nothing folded, no line break the
    passage does not have)."""
    if not isinstance(refs, list):
        return False
    for ref in refs:
        passage = passages.get(ref) if isinstance(ref, str) else None
        if passage is not None and is_literal_quotation(text, passage):
            return True
    return False


RENDERABLE_REASONS = frozenset({RejectionReason.URL_IN_TEXT, RejectionReason.MARKUP_IN_TEXT})
"""The reasons of the renderable-text rule, the one check a verbatim quotation is not
held to: it is the library's text then (a book may print a URL or an HTML example),
and the interfaces neutralise it where they emit it to a renderer."""


def check_display_text(text: str, limits: Limits) -> Rejection | None:
    """The checks any model-written text shown as answer prose must pass; None when it
    passes. The renderable-text rule is the last (:mod:`citadel.domain.renderable`)."""
    if not is_valid_utf8(text):
        return Rejection(RejectionReason.INVALID_UTF8, "text is not valid UTF-8")
    if not text.strip():
        return Rejection(RejectionReason.EMPTY_TEXT, "text is empty")
    if utf8_size(text.strip()) > limits.max_segment_bytes:
        return Rejection(
            RejectionReason.SEGMENT_TOO_LONG, f"text exceeds {limits.max_segment_bytes} bytes"
        )
    bad = forbidden_character(text)
    if bad is not None:
        reason = (
            RejectionReason.FORMAT_CHARACTER
            if unicodedata.category(bad) == "Cf"
            else RejectionReason.CONTROL_CHARACTER
        )
        return Rejection(reason, f"text contains U+{ord(bad):04X}")
    form = renderable_form(text)
    if form is Renderable.LINK:
        return Rejection(
            RejectionReason.URL_IN_TEXT, "text contains a URL, a host name or an e-mail address"
        )
    if form is Renderable.MARKUP:
        return Rejection(
            RejectionReason.MARKUP_IN_TEXT, "text contains markup, a Markdown link or a heading"
        )
    return None


_WORD = re.compile(r"\w+")


def _wording(text: str) -> str:
    """The words of ``text``, case-folded: what two segments must differ in."""
    return " ".join(_WORD.findall(text.casefold()))


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _names(keys: set[object]) -> str:
    shown = sorted(_quote(str(k)) for k in keys)
    return (
        ", ".join(shown) if len(shown) <= 3 else f"{', '.join(shown[:3])} and {len(shown) - 3} more"
    )


_PLAIN = re.compile(r"[A-Za-z0-9_-]{1,24}")


def _quote(value: str) -> str:
    """A ref or key for an error message: shown only when it is a plain short word.

    Anything else is model-controlled text of arbitrary shape; a rejection
    message is shown to readers, so it names its size instead of echoing it.
    """
    if _PLAIN.fullmatch(value):
        return repr(value)
    return f"<{len(value)} characters, not shown>"
