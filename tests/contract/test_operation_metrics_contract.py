"""One contract for the OperationMetrics port, run against every adapter.

As ``citadel.app.ports.operations.OperationMetrics`` describes it: each ``ingest``
is one document counted under its format and outcome only, its duration added to
that series, and a refusal's code counted once under that code; each ``search`` is
one search counted under the mode asked; every label value the port names is
accepted; counts start at zero, never go down, and two instances count apart; and
the ingest and search use cases report through it what their own docs say
(docs/metrics.md: refusals by code, failures, hybrid on a library without an
embedder still ``hybrid``, a refused search not timed). Each adapter is read
through a ``Probe`` (how a count and a duration are read back): the Prometheus
adapter through its own real registry. The counting fake
(``adapters/metrics/counting.py``) implements ``TrustMetrics`` only, and no fake in
``tests/fakes`` implements this port; a new adapter joins by adding its probe to
``PROBES``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.metrics.prometheus import PrometheusMetrics
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.parsers.plaintext import PlainTextParser
from citadel.app.errors import IngestError, InvalidRequest
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.ports import DocumentMetadata, OperationMetrics, ProgressCallback
from citadel.app.search import SearchService
from citadel.domain.document import ParsedDocument
from citadel.domain.limits import Limits
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor, Role
from tests.builders import operator

FORMATS = ("pdf", "epub", "html", "markdown", "markdown-folder", "text", "other")
OUTCOMES = ("created", "updated", "unchanged", "refused", "failed")
MODES = tuple(mode.value for mode in SearchMode)
REASONS = ("forbidden", "unsupported", "no_text", "encrypted", "too_many_pages")
"""Some of the refusal codes docs/metrics.md lists."""


@dataclass(frozen=True)
class Probe:
    """An adapter and how to read back what it counted."""

    metrics: OperationMetrics
    ingests: Callable[[str, str], float]
    """Documents counted under (format, outcome)."""
    ingest_seconds: Callable[[str, str], float]
    refusals: Callable[[str], float]
    searches: Callable[[str], float]
    search_seconds: Callable[[str], float]


def prometheus_probe() -> Probe:
    metrics = PrometheusMetrics()

    def sample(name: str, **labels: str) -> float:
        return metrics.registry.get_sample_value(name, labels) or 0.0

    return Probe(
        metrics,
        ingests=lambda f, o: sample("citadel_ingest_duration_seconds_count", format=f, outcome=o),
        ingest_seconds=lambda f, o: sample(
            "citadel_ingest_duration_seconds_sum", format=f, outcome=o
        ),
        refusals=lambda r: sample("citadel_ingest_refusals_total", reason=r),
        searches=lambda m: sample("citadel_search_duration_seconds_count", mode=m),
        search_seconds=lambda m: sample("citadel_search_duration_seconds_sum", mode=m),
    )


PROBES: dict[str, Callable[[], Probe]] = {"prometheus": prometheus_probe}


@pytest.fixture(params=sorted(PROBES))
def probe(request: pytest.FixtureRequest) -> Probe:
    return PROBES[request.param]()


Totals = dict[tuple[str, ...], float]


def totals(probe: Probe) -> Totals:
    """Every count and duration the probe can read, by what it is of."""
    seen: Totals = {}
    for fmt, outcome in itertools.product(FORMATS, OUTCOMES):
        seen["ingests", fmt, outcome] = probe.ingests(fmt, outcome)
        seen["ingest_seconds", fmt, outcome] = probe.ingest_seconds(fmt, outcome)
    for reason in REASONS:
        seen["refusals", reason] = probe.refusals(reason)
    for mode in MODES:
        seen["searches", mode] = probe.searches(mode)
        seen["search_seconds", mode] = probe.search_seconds(mode)
    return seen


def changed(before: Totals, after: Totals) -> Totals:
    return {key: after[key] - before[key] for key in after if after[key] != before[key]}


def test_counting_starts_at_zero(probe: Probe) -> None:
    assert set(totals(probe).values()) == {0.0}


@pytest.mark.parametrize(("fmt", "outcome"), list(itertools.product(FORMATS, OUTCOMES)))
def test_an_ingest_counts_once_under_its_format_and_outcome_only(
    probe: Probe, fmt: str, outcome: str
) -> None:
    before = totals(probe)
    probe.metrics.ingest(fmt, outcome, 0.75)
    probe.metrics.ingest(fmt, outcome, 0.25)
    assert changed(before, totals(probe)) == {
        ("ingests", fmt, outcome): 2,
        ("ingest_seconds", fmt, outcome): 1.0,
    }


@pytest.mark.parametrize("reason", REASONS)
def test_a_refusal_counts_its_code_once(probe: Probe, reason: str) -> None:
    before = totals(probe)
    probe.metrics.ingest("pdf", "refused", 0.5, reason)
    assert changed(before, totals(probe)) == {
        ("ingests", "pdf", "refused"): 1,
        ("ingest_seconds", "pdf", "refused"): 0.5,
        ("refusals", reason): 1,
    }


@pytest.mark.parametrize("mode", MODES)
def test_a_search_counts_once_under_its_mode_only(probe: Probe, mode: str) -> None:
    before = totals(probe)
    probe.metrics.search(mode, 0.125)
    probe.metrics.search(mode, 0.375)
    assert changed(before, totals(probe)) == {
        ("searches", mode): 2,
        ("search_seconds", mode): 0.5,
    }


@pytest.mark.parametrize("seconds", [0.0, 1e-7, 45.0, 3600.0])
def test_one_call_is_one_observation_whatever_it_took(probe: Probe, seconds: float) -> None:
    probe.metrics.ingest("markdown", "created", seconds)
    probe.metrics.search("lexical", seconds)
    assert probe.ingests("markdown", "created") == 1
    assert probe.searches("lexical") == 1
    assert probe.ingest_seconds("markdown", "created") == pytest.approx(seconds)
    assert probe.search_seconds("lexical") == pytest.approx(seconds)


def test_counts_never_go_down(probe: Probe) -> None:
    previous = totals(probe)
    steps: list[Callable[[], None]] = [
        lambda: probe.metrics.ingest("pdf", "created", 2.0),
        lambda: probe.metrics.ingest("other", "refused", 0.0, "unsupported"),
        lambda: probe.metrics.search("hybrid", 0.0),
        lambda: probe.metrics.ingest("text", "failed", 0.01),
        lambda: probe.metrics.search("dense", 0.02),
    ]
    for call in itertools.islice(itertools.cycle(steps), 25):
        call()
        now = totals(probe)
        assert all(now[key] >= previous[key] for key in now)
        previous = now
    assert previous["ingests", "pdf", "created"] == 5
    assert previous["refusals", "unsupported"] == 5


def test_two_instances_count_apart() -> None:
    for make in PROBES.values():
        first, second = make(), make()
        first.metrics.ingest("pdf", "created", 1.0)
        first.metrics.search("lexical", 0.1)
        assert first.ingests("pdf", "created") == 1
        assert second.ingests("pdf", "created") == 0
        assert second.searches("lexical") == 0


# --- through the use cases ---------------------------------------------------

FILES = FileDocuments([MarkdownParser(), PlainTextParser()], max_file_bytes=1 << 20)
READER = Actor(user_id="reader", tenant="default", role=Role.READER)


class Exploding:
    """A document whose parser breaks unexpectedly (not an ``IngestError``)."""

    shown = "broken.md"
    origin = "/nowhere/broken.md"
    metadata: DocumentMetadata | None = None

    def parse(self, progress: ProgressCallback | None = None) -> ParsedDocument:
        raise RuntimeError("parser bug")


def test_the_ingest_use_case_counts_each_document_by_format_and_outcome(
    probe: Probe, tmp_path: Path
) -> None:
    ingest = IngestService(InMemoryLibrary(), FixedClock(), metrics=probe.metrics)
    book = tmp_path / "book.md"
    book.write_text("# Book\n\nThe first edition says one thing.\n")
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00\x01binary")
    ingest.ingest(FILES.open(book), IngestOptions(), actor=operator())
    ingest.ingest(FILES.open(book), IngestOptions(), actor=operator())
    book.write_text("# Book\n\nThe second edition says another.\n")
    ingest.ingest(FILES.open(book), IngestOptions(), actor=operator())
    with pytest.raises(IngestError):
        ingest.ingest(FILES.open(book), IngestOptions(), actor=READER)
    with pytest.raises(IngestError):
        ingest.ingest(FILES.open(blob), IngestOptions(), actor=operator())
    with pytest.raises(RuntimeError):
        ingest.ingest(Exploding(), IngestOptions(), actor=operator())
    counted = {key[1:]: n for key, n in totals(probe).items() if key[0] == "ingests" and n}
    assert counted == {
        ("markdown", "created"): 1,
        ("markdown", "unchanged"): 1,
        ("markdown", "updated"): 1,
        ("markdown", "refused"): 1,
        ("other", "refused"): 1,
        ("markdown", "failed"): 1,
    }
    assert probe.refusals("forbidden") == 1
    assert probe.refusals("unsupported") == 1
    assert all(
        probe.ingest_seconds(fmt, outcome) >= 0 for (fmt, outcome) in counted
    )  # perf_counter differences: never negative


def test_the_search_use_case_counts_the_mode_asked_and_not_refusals(
    probe: Probe, tmp_path: Path
) -> None:
    library = InMemoryLibrary()
    book = tmp_path / "book.md"
    book.write_text("# Book\n\nThe harbour lists high water twice a day.\n")
    IngestService(library, FixedClock()).ingest(FILES.open(book), IngestOptions(), actor=operator())
    search = SearchService(library, library, Limits(), metrics=probe.metrics)
    for mode in (SearchMode.LEXICAL, SearchMode.HYBRID, SearchMode.HYBRID):
        assert search.search(SearchRequest(query="high water", mode=mode), READER).results
    for refused in (SearchRequest(query="   "), SearchRequest("high water", mode=SearchMode.DENSE)):
        with pytest.raises(InvalidRequest):
            search.search(refused, READER)
    # Hybrid without an embedder runs as lexical and is still counted as hybrid.
    assert {mode: probe.searches(mode) for mode in MODES} == {
        "lexical": 1,
        "hybrid": 2,
        "dense": 0,
    }
    assert 0 < probe.search_seconds("hybrid") < 5
