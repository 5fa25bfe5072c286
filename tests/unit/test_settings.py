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
