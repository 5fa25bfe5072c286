"""``citadel serve-grpc --metrics HOST:PORT``: the service process' own /metrics."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from citadel.app.errors import Forbidden
from citadel.bootstrap.grpc_wiring import build_retrieval_client
from citadel.config import Settings
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor
from citadel.entrypoints.cli import app
from tests.integration.test_cli import CLEAN_ENV
from tests.integration.test_grpc_cli import add_user, free_port, library, start, stop

__all__ = ["library"]  # the fixture: certificates and a home with one note ingested

SEARCH = "/citadel.v1.Retrieval/Search"


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode("utf-8")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_the_retrieval_service_serves_its_call_and_search_metrics(
    library: tuple[Path, Path],
) -> None:
    certs, home = library
    add_user(home, "rita")
    port = free_port()
    process, address = start(
        home, "--certs", str(certs), "--retrieval", "127.0.0.1:0", "--metrics", f"127.0.0.1:{port}"
    )
    try:
        client = build_retrieval_client(Settings(home=home), address, certs)
        try:
            found = client.search(
                SearchRequest("flux capacitor workers", mode=SearchMode.LEXICAL),
                Actor("rita", "acme"),
            )
            assert found.results
            with pytest.raises(Forbidden):
                client.search(SearchRequest("flux capacitor"), Actor("nobody", "acme"))
        finally:
            client.close()
        samples = scrape(port)
    finally:
        assert stop(process) == 0
    count = "citadel_grpc_request_duration_seconds_count"
    assert samples[(count, (("code", "OK"), ("method", SEARCH)))] == 1
    assert samples[(count, (("code", "PERMISSION_DENIED"), ("method", SEARCH)))] == 1
    searched = ("citadel_search_duration_seconds_count", (("mode", "lexical"),))
    assert samples[searched] == 1
    assert samples[("process_resident_memory_bytes", ())] > 1_000_000


@pytest.mark.parametrize("address", ["nowhere", "127.0.0.1:http"])
def test_a_bad_metrics_address_is_a_configuration_error(
    library: tuple[Path, Path], address: str
) -> None:
    certs, home = library
    outcome = CliRunner().invoke(
        app,
        [
            *("serve-grpc", "--certs", str(certs), "--home", str(home)),
            *("--retrieval", "127.0.0.1:0", "--metrics", address),
        ],
        env=dict(CLEAN_ENV, CITADEL_TENANT="acme", CITADEL_EMBEDDER="hashing"),
    )
    assert outcome.exit_code == 2
    assert "--metrics" in outcome.stderr and "HOST:PORT" in outcome.stderr
