"""The bounds of one answer: evidence, model output and concurrency (ARCHITECTURE.md)."""

from __future__ import annotations

from dataclasses import dataclass

from citadel.domain.errors import InvalidValue


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on evidence, model output and concurrency (ARCHITECTURE.md, default limits)."""

    max_evidence: int = 8
    max_passage_bytes: int = 8 * 1024
    max_context_bytes: int = 32 * 1024
    max_segments: int = 8
    max_citations_per_segment: int = 8
    max_segment_bytes: int = 1024
    max_answer_bytes: int = 8 * 1024
    max_output_tokens: int = 1024
    max_concurrent_generations: int = 4
    generator_deadline_s: float = 30.0
    max_query_bytes: int = 4 * 1024
    max_results: int = 50
    max_repairs: int = 1
    """Regenerations after an invalid candidate, with the same frozen manifest: 0 or 1."""

    def __post_init__(self) -> None:
        for name in (
            "max_evidence",
            "max_passage_bytes",
            "max_context_bytes",
            "max_segments",
            "max_citations_per_segment",
            "max_segment_bytes",
            "max_answer_bytes",
            "max_output_tokens",
            "max_concurrent_generations",
            "max_query_bytes",
            "max_results",
        ):
            if getattr(self, name) < 1:
                raise InvalidValue(f"limit {name} must be at least 1")
        if self.generator_deadline_s <= 0:
            raise InvalidValue("generator_deadline_s must be positive")
        if self.max_repairs not in (0, 1):
            raise InvalidValue("max_repairs must be 0 or 1")
