"""Models: the embedder, the answer generator and the question-passage relevance scorer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

# Vectors are numpy arrays at this boundary: a list of Python floats per chunk
# would cost more than the search itself at 100k chunks.
from citadel.app.ports.library import Vectors
from citadel.domain.answer import Candidate, GenerationRequest


class Embedder(Protocol):
    """Text to unit-length vectors; the same text always gives the same vector."""

    name: str
    """Model identity, part of the vector cache key (vectors of two models never mix)."""
    dimension: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """A float32 array of shape (len(texts), dimension), each row L2-normalised.

        Batching and threading are the adapter's business.
        """
        ...


class AnswerGenerator(Protocol):
    """Writes a candidate answer from the closed evidence; never an authority.

    ``model`` and ``prompt_version`` name what would write the next answer;
    with ``name`` they are part of an answer's cache key, so a change of
    either never serves an answer written under the old one.
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def prompt_version(self) -> str: ...

    @property
    def quotes(self) -> bool:
        """Whether every segment it writes is its cited passage's own text (the built-in
        extractive generator). The support step then keeps only ``verbatim`` segments:
        from such a generator, any other is a defect, never an answer."""
        ...

    async def generate(self, request: GenerationRequest) -> Candidate:
        """Return a candidate (any JSON value) or raise; the caller validates and degrades."""
        ...


class RelevanceScorer(Protocol):
    """How well a text answers a question: (question, passage) or (question, sentence).

    Relevance is not support: a sentence can be a passage's own words and still not
    answer the question. The answer use case asks this port whether the evidence answers
    at all (the answerability decision), and in what order; the extractive generator
    asks it which sentences answer.
    """

    name: str
    """The scorer and its weights' version, e.g. ``"relevance-minilm-l3/1"``: recorded
    with each answer, so a decision can be traced to what made it."""

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        """One probability in [0, 1] per text that it answers ``question``, in order.

        Calibrated on the project's data, so one threshold reads the same for every
        text length. Deterministic: the same pair always gets the same score. An empty
        ``texts`` gives an empty list; an empty text scores 0."""
        ...
