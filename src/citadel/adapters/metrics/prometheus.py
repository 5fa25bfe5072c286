"""The trust metrics in a Prometheus registry of their own (served at /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

_STAGE_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
)


class PrometheusMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._answers = Counter(
            "citadel_answers", "Answers by outcome", ["outcome"], registry=self.registry
        )
        self._rejections = Counter(
            "citadel_candidate_rejections",
            "Generator candidates refused, by reason",
            ["reason"],
            registry=self.registry,
        )
        self._resolutions = Counter(
            "citadel_citation_resolutions",
            "Citations resolved at display, by link state",
            ["state"],
            registry=self.registry,
        )
        self._denials = Counter(
            "citadel_display_authorization_denials",
            "Citations withheld at display because the reader may not see the source now",
            registry=self.registry,
        )
        self._fabricated = Counter(
            "citadel_fabricated_links_rendered",
            "Links shown that did not come from the resolver (must stay 0)",
            registry=self.registry,
        )
        self._supports = Counter(
            "citadel_answer_segments",
            "Segments shown in answers, by support label",
            ["label"],
            registry=self.registry,
        )
        self._stages = Histogram(
            "citadel_stage_seconds",
            "Time per answer stage",
            ["stage"],
            buckets=_STAGE_BUCKETS,
            registry=self.registry,
        )
        # Zero series exist from the start, so a dashboard shows 0 rather than nothing.
        self._fabricated.inc(0)
        self._denials.inc(0)
        for label in ("verbatim", "supported", "partial", "unsupported"):
            self._supports.labels(label=label).inc(0)

    def answer(self, outcome: str) -> None:
        self._answers.labels(outcome=outcome).inc()

    def rejection(self, reason: str) -> None:
        self._rejections.labels(reason=reason).inc()

    def resolution(self, state: str) -> None:
        self._resolutions.labels(state=state).inc()

    def support(self, label: str) -> None:
        self._supports.labels(label=label).inc()

    def display_denial(self) -> None:
        self._denials.inc()

    def fabricated_link(self) -> None:
        self._fabricated.inc()

    def stage(self, name: str, seconds: float) -> None:
        self._stages.labels(stage=name).observe(seconds)

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return bytes(generate_latest(self.registry))
