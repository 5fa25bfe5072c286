"""The trust, operation and HTTP metrics in a Prometheus registry of their own (served
at /metrics), with the process' own (``process_*``, ``python_*``). docs/metrics.md
lists every series and what an operator does with it."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    start_http_server,
)

from citadel.domain.answer import DegradedReason
from citadel.domain.support import SupportLabel

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

_SCORE_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
"""Probabilities in [0, 1]: tenths, with the ends split finer."""

_REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
"""A ~5 ms to 5 s service: HTTP requests, RPCs, searches; the tail buckets catch
streamed answers and stalls."""

_INGEST_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
"""A refusal takes milliseconds, a large PDF with its embedding minutes."""


class PrometheusMetrics:
    """Implements ``TrustMetrics`` and ``OperationMetrics`` (app ports) and the HTTP and
    gRPC edges' request metrics. Label values are closed sets the callers choose."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._longest_seen = 0.0
        # The same collectors prometheus_client registers on its default registry, on
        # this one: process_* (CPU, memory, file descriptors), python_gc_*, python_info.
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            self.registry.register(collector)
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
        self._answerability = Histogram(
            "citadel_answerability_score",
            "The answerability decision's score (the best evidence passage's relevance) per"
            " answer that had one",
            buckets=_SCORE_BUCKETS,
            registry=self.registry,
        )
        self._operations()
        # Zero series exist from the start, so a dashboard shows 0 rather than nothing.
        self._fabricated.inc(0)
        self._denials.inc(0)
        for label in SupportLabel:
            self._supports.labels(label=label.value).inc(0)
        for outcome in ("accepted", *(reason.value for reason in DegradedReason)):
            self._answers.labels(outcome=outcome).inc(0)

    def _operations(self) -> None:
        self._ingests = Histogram(
            "citadel_ingest_duration_seconds",
            "Documents ingested, by format and outcome, and how long each took",
            ["format", "outcome"],
            buckets=_INGEST_BUCKETS,
            registry=self.registry,
        )
        self._refusals = Counter(
            "citadel_ingest_refusals",
            "Documents refused at ingest, by the refusal's stable code",
            ["reason"],
            registry=self.registry,
        )
        self._searches = Histogram(
            "citadel_search_duration_seconds",
            "Searches answered (on their own or inside an answer), by mode asked",
            ["mode"],
            buckets=_REQUEST_BUCKETS,
            registry=self.registry,
        )
        self._http = Histogram(
            "citadel_http_request_duration_seconds",
            "HTTP requests by route template and method, to the end of the response body",
            ["route", "method"],
            buckets=_REQUEST_BUCKETS,
            registry=self.registry,
        )
        self._http_requests = Counter(
            "citadel_http_requests",
            "HTTP requests by route template, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self._in_flight = Gauge(
            "citadel_http_requests_in_flight",
            "HTTP requests being served now",
            registry=self.registry,
        )
        self._renders = Histogram(
            "citadel_page_render_duration_seconds",
            "Page images and page counts a render worker took on, by outcome (ok, timeout,"
            " memory, died, refused, failed), and how long each ran",
            ["outcome"],
            buckets=_REQUEST_BUCKETS,
            registry=self.registry,
        )
        self._longest_render = Gauge(
            "citadel_page_render_longest_seconds",
            "The longest a render worker has run one job since the server started",
            registry=self.registry,
        )
        self._rpcs = Histogram(
            "citadel_grpc_request_duration_seconds",
            "gRPC calls served, by full method name and status code",
            ["method", "code"],
            buckets=_REQUEST_BUCKETS,
            registry=self.registry,
        )

    def ingest(self, fmt: str, outcome: str, seconds: float, reason: str | None = None) -> None:
        self._ingests.labels(format=fmt, outcome=outcome).observe(seconds)
        if reason is not None:
            self._refusals.labels(reason=reason).inc()

    def search(self, mode: str, seconds: float) -> None:
        self._searches.labels(mode=mode).observe(seconds)

    def http_started(self) -> None:
        self._in_flight.inc()

    def http_finished(self, route: str, method: str, status: int, seconds: float) -> None:
        self._in_flight.dec()
        self._http.labels(route=route, method=method).observe(seconds)
        self._http_requests.labels(route=route, method=method, status=str(status)).inc()

    def page_render(self, outcome: str, seconds: float) -> None:
        self._renders.labels(outcome=outcome).observe(seconds)
        if seconds > self._longest_seen:
            self._longest_seen = seconds
            self._longest_render.set(seconds)

    def rpc(self, method: str, code: str, seconds: float) -> None:
        self._rpcs.labels(method=method, code=code).observe(seconds)

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

    def answerability(self, score: float) -> None:
        self._answerability.observe(score)

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return bytes(generate_latest(self.registry))

    def listen(self, host: str, port: int) -> tuple[int, Callable[[], None]]:
        """Serve the registry over plain HTTP on ``host:port`` (0: a free port) from a
        thread, for a process with no HTTP app of its own (``citadel serve-grpc``):
        the port bound, and what stops the listener."""
        server, thread = start_http_server(port, addr=host, registry=self.registry)

        def stop() -> None:
            server.shutdown()
            server.server_close()
            thread.join(5)

        return int(server.server_address[1]), stop
