"""The built-in extractive generator: it answers by quoting the evidence.

It needs no model of its own. It cuts each passage of the closed evidence into
quotable units — whole sentences, code lines and short code blocks, never a
fragment a chunk boundary cut (:mod:`.units`) — scores them against the question
by meaning (the packaged embedder, when it is given one) and by words, and quotes
the units of the passage that answers best, adding another passage only when it
answers nearly as well (:mod:`.choice`). The units ingest cut and stored beside
a chunk are read rather than cut again (:mod:`.stored`). Every segment's text is its passage's own
text (whitespace runs aside; code keeps its line breaks), and cites that passage.
Its output is an ordinary candidate: it passes through the same validation as any
model's.
"""

from __future__ import annotations

import asyncio
import functools
import json

from citadel.adapters.generators.extractive.choice import Choice, VectorCache, Weights, choose
from citadel.adapters.generators.extractive.stored import quoted_from, read_units
from citadel.adapters.generators.extractive.units import Unit, quotable_units
from citadel.app.ports.inference import Embedder, RelevanceScorer
from citadel.domain.answer import Candidate, GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.statement import is_statement
from citadel.domain.validation import RENDERABLE_REASONS, check_display_text

_PROMPT_VERSION = "extractive/5"
"""Bump when the sentence choice changes, so cached answers are not reused.

2: a sentence with HTML markup as the tokenizer reads it (``<Thread(worker 1, ...)>``,
``i<n``) is no longer quoted.
3: whole sentences, code lines and short code blocks, chosen by the embedder and
by words; the best passage first, weakly related ones left out.
4: a relevance scorer, when given, is most of a unit's score and stops the answer
where the next unit does not answer (``prompt_version`` then names its weights).
5: a unit that states nothing (``domain.statement.is_statement``: not a sentence nor a
code line) is not quoted: it would not be ``verbatim``, so its answer would drop it.
(A change to what :mod:`.units` cuts also bumps ``stored.FORMAT``: a test pins both.)"""


class ExtractiveGenerator:
    name = "extractive"
    model = "extractive"
    quotes = True
    """Every segment is a unit's text, its passage's own: never anything but ``verbatim``."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        embedder: Embedder | None = None,
        weights: Weights | None = None,
        relevance: RelevanceScorer | None = None,
    ) -> None:
        self._limits = limits or Limits()
        self._vectors = VectorCache(embedder) if embedder is not None else None
        self._weights = weights or Weights()
        self._relevance = relevance

    @property
    def prompt_version(self) -> str:
        """Names the choice: with a relevance scorer, the scorer's weights too, so an
        answer chosen by other weights is never served from the cache."""
        if self._relevance is None:
            return _PROMPT_VERSION
        return f"{_PROMPT_VERSION}+{self._relevance.name}"

    async def generate(self, request: GenerationRequest) -> Candidate:
        # Off the event loop: embedding the sentences is CPU work of tens of milliseconds.
        payload = {"segments": await asyncio.to_thread(self.segments, request)}
        return Candidate(
            payload=payload,
            raw=json.dumps(payload, ensure_ascii=False),
            model=self.model,
            prompt_version=self.prompt_version,
        )

    def segments(self, request: GenerationRequest) -> list[dict[str, object]]:
        evidence = request.evidence
        passages = [_passage_units(e.passage, e.units) for e in evidence]
        headings = [e.section or e.chapter or e.title for e in evidence]
        chosen = self._choose(request.question, passages, headings)
        if not all(quoted_from(c.unit, evidence[c.passage].passage) for c in chosen):
            # A stored form that does not say its passage's words (edited by hand): cut.
            passages = [_units(e.passage) for e in evidence]
            chosen = self._choose(request.question, passages, headings)
        segments: list[dict[str, object]] = []
        total = 0
        for choice in chosen[: self._limits.max_segments]:
            size = len(choice.unit.text.encode("utf-8"))
            if total + size > self._limits.max_answer_bytes:
                break
            total += size
            ref = request.evidence[choice.passage].ref
            segments.append({"text": choice.unit.text, "evidence_ids": [ref]})
        return segments

    def _choose(
        self, question: str, passages: list[tuple[Unit, ...]], headings: list[str]
    ) -> list[Choice]:
        return choose(
            question,
            passages,
            headings,
            self._vectors,
            self._shown,
            self._weights,
            self._relevance,
        )

    def _shown(self, text: str) -> bool:
        # The validator's own display check decides: a unit it would refuse (a control
        # character, too long) is never quoted. A unit is its passage's own words, so
        # the renderable-text rule (a URL, ``<NA>``) is not its: the validator lets a
        # verbatim quotation through it, and the interfaces neutralise it.
        # A unit that states nothing (too few content words, not code) would not be
        # ``verbatim``, and a quoting generator's other segments are dropped.
        if not is_statement(text):
            return False
        problem = check_display_text(text, self._limits)
        return problem is None or problem.reason in RENDERABLE_REASONS


def _passage_units(passage: str, stored: str | None) -> tuple[Unit, ...]:
    """The units ingest stored for the passage when they are its own, else cut now.
    (Read afresh each time: a cache keyed by the texts cost the cold path more, in
    hashing and collection, than reading saves on a passage seen before.)"""
    units = read_units(stored, passage)
    return units if units is not None else _units(passage)


@functools.lru_cache(maxsize=2048)
def _units(passage: str) -> tuple[Unit, ...]:
    """A passage's units, kept for the passages search keeps returning."""
    return tuple(quotable_units(passage))
