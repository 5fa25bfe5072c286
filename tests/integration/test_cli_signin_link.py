"""``citadel users add`` and ``citadel users link`` print a one-time sign-in link: under
CITADEL_PUBLIC_URL when it is set, a route otherwise; the token stays alone on stdout."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from citadel.bootstrap import build
from citadel.config import Settings
from citadel.entrypoints.cli import app
from tests.integration.test_cli import CLEAN_ENV

PUBLIC = "https://citadel.example.org/team"


def run(*args: str, public_url: str | None = None) -> tuple[int, str, str]:
    env = {**CLEAN_ENV, "CITADEL_PUBLIC_URL": public_url}
    outcome = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
    return outcome.exit_code, outcome.stdout, outcome.stderr


def _spend(home: Path, link: str) -> str:
    services = build(Settings(home=home, embedder="none"))
    try:
        return services.users.use_link(link.rsplit("/", 1)[1]).user_id
    finally:
        services.close()


def test_users_add_prints_the_token_and_a_link_under_the_public_url(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    code, out, err = run("users", "add", "ada", "--home", home, public_url=PUBLIC)
    assert code == 0, err
    assert out.strip().startswith("ctd_") and "\n" not in out.strip(), "stdout is the token"
    line = next(x for x in err.splitlines() if "one-time sign-in link" in x)
    link = line.rsplit(": ", 1)[1]
    assert link.startswith(f"{PUBLIC}/signin/link/")
    assert _spend(tmp_path / "home", link) == "ada"


def test_users_link_prints_a_fresh_link_and_json_carries_it(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    code, out, _ = run("users", "add", "bo", "--home", home, "--json")
    assert code == 0
    added = json.loads(out)
    assert added["signin_link"].startswith("/signin/link/"), "a route without a public URL"
    code, out, err = run("users", "link", "bo", "--home", home, public_url=PUBLIC)
    assert code == 0, err
    assert out.strip().startswith(f"{PUBLIC}/signin/link/")
    assert _spend(tmp_path / "home", out.strip()) == "bo"
    code, _, err = run("users", "link", "nobody", "--home", home)
    assert code == 1
    assert "no user nobody" in err
