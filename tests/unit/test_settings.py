"""Settings from the environment: the database path and the embedder choice."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from citadel.config import ConfigError, Settings
from citadel.entrypoints.cli import app


def test_the_database_defaults_to_the_home_and_takes_a_sqlite_path() -> None:
    assert Settings.from_env({"CITADEL_HOME": "h"}).db_path == Path("h") / "citadel.db"
    assert Settings.from_env({"CITADEL_DB": " lib/x.db "}).db_path == Path("lib/x.db")


@pytest.mark.parametrize(
    "url", ["postgresql://u@localhost/citadel", "postgres://db/x", "sqlite:///x.db"]
)
def test_a_database_url_is_refused_not_taken_for_a_path(url: str) -> None:
    scheme = url.split("://", maxsplit=1)[0]
    with pytest.raises(ConfigError, match=f"CITADEL_DB: {scheme}:// databases are not supported"):
        Settings.from_env({"CITADEL_DB": url})


def test_the_cli_refuses_a_database_url_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"CITADEL_DB": "postgresql://u@localhost/citadel", "CITADEL_HOME": str(tmp_path / "h")}
    outcome = CliRunner().invoke(app, ["search", "anything"], env=env)
    assert outcome.exit_code == 2
    assert "postgresql:// databases are not supported yet" in outcome.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["minilm", "minilm-float", "hashing", "none", " MiniLM "])
def test_the_embedders_to_choose_from(name: str) -> None:
    assert Settings.from_env({"CITADEL_EMBEDDER": name}).embedder == name.strip().lower()


def test_an_unknown_embedder_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="minilm, minilm-float, hashing, none"):
        Settings.from_env({"CITADEL_EMBEDDER": "bge"})


def test_the_json_body_cap_defaults_to_one_mebibyte_and_is_configurable() -> None:
    assert Settings.from_env({}).http.max_json_bytes == 1024 * 1024
    assert Settings.from_env({"CITADEL_HTTP_MAX_JSON_BYTES": "4096"}).http.max_json_bytes == 4096
    for bad in ("0", "-1", "1MB"):
        with pytest.raises(ConfigError, match="CITADEL_HTTP_MAX_JSON_BYTES"):
            Settings.from_env({"CITADEL_HTTP_MAX_JSON_BYTES": bad})


def test_trusted_proxies_default_to_none_and_take_addresses_and_networks() -> None:
    assert Settings.from_env({}).http.trusted_proxies == ()
    assert Settings.from_env({"CITADEL_HTTP_TRUSTED_PROXIES": " "}).http.trusted_proxies == ()
    env = {"CITADEL_HTTP_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8,,::1,127.0.0.1/32"}
    assert Settings.from_env(env).http.trusted_proxies == ("127.0.0.1", "10.0.0.0/8", "::1")


@pytest.mark.parametrize("value", ["*", "proxy.internal", "10.0.0.1:8080", "300.1.1.1"])
def test_trusted_proxies_are_addresses_never_wildcards_or_names(value: str) -> None:
    with pytest.raises(ConfigError, match="CITADEL_HTTP_TRUSTED_PROXIES"):
        Settings.from_env({"CITADEL_HTTP_TRUSTED_PROXIES": value})
