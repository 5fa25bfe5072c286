"""The Dockerfile, compose.yaml and .dockerignore say what citadel does, read statically.

No Docker daemon runs where the suite runs, so the files are checked against the code
instead of built: the image's command is a real ``citadel`` command whose options parse,
on the port ``citadel serve`` defaults to; its health check asks a route the server
has; every variable the compose file gives citadel is one citadel knows, with values
``Settings`` accepts; the two servers share the database, the secrets and the audit key
but not their homes. docs/deployment.md says how to build and run them.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from citadel.config import Settings
from citadel.entrypoints.cli import app
from citadel.entrypoints.http.api import ops
from citadel.settings_table import is_known_variable

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
IGNORE = ROOT / ".dockerignore"
SECRET = "s" * 40


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            word, _, rest = stripped.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def the(name: str) -> list[str]:
    return [rest for word, rest in instructions() if word == name]


def run_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last:]


def commands() -> dict[str, Any]:
    """The ``citadel`` group's commands (Typer's group: click's interface, its own class)."""
    found: dict[str, Any] = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    return found


def serve_command() -> Any:
    return commands()["serve"]


def parsed(argv: list[str]) -> dict[str, Any]:
    """The parameters ``argv`` (``citadel serve ...``) gives, as the CLI parses them."""
    assert argv[:2] == ["citadel", "serve"], argv
    assert argv[1] in commands()
    return dict(serve_command().make_context("serve", argv[2:]).params)


def default_port() -> int:
    (port,) = [p.default for p in serve_command().params if p.name == "port"]
    assert isinstance(port, int)
    return port


def test_the_image_serves_on_every_address_at_the_default_port() -> None:
    (cmd,) = [rest for word, rest in run_stage() if word == "CMD"]
    params = parsed(json.loads(cmd))
    assert params["host"] == "0.0.0.0"
    assert params["port"] == default_port()
    assert the("EXPOSE") == [str(default_port())]


def test_the_image_is_built_from_the_repository_on_python_311_slim() -> None:
    assert {rest.split()[0] for rest in the("FROM")} == {"python:3.11-slim"}
    assert any(re.search(r"\bpip install \.$", rest) for rest in the("RUN"))
    copied = {src for rest in the("COPY") if "--from" not in rest for src in rest.split()[:-1]}
    assert copied == {"pyproject.toml", "README.md", "LICENSE", "src"}


def test_the_image_runs_as_a_user_that_is_not_root_with_the_home_a_volume() -> None:
    stage = run_stage()
    users = [rest for word, rest in stage if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    words = [word for word, _ in stage]
    assert words.index("USER") < words.index("CMD")
    env = " ".join(rest for word, rest in stage if word == "ENV")
    home = re.search(r"\bCITADEL_HOME=(\S+)", env)
    assert home is not None
    (volume,) = [rest for word, rest in stage if word == "VOLUME"]
    assert json.loads(volume) == [home.group(1)]


def test_the_health_check_asks_the_servers_health_route_on_its_port() -> None:
    (check,) = the("HEALTHCHECK")
    url = re.search(r"http://127\.0\.0\.1:(\d+)(/\w+)", check)
    assert url is not None
    assert int(url.group(1)) == default_port()
    assert url.group(2) in {getattr(route, "path", None) for route in ops.routes}
    assert url.group(2) == "/healthz"


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def servers() -> dict[str, dict[str, Any]]:
    """The compose services that run ``citadel serve``."""
    found = {
        name: service
        for name, service in compose()["services"].items()
        if "citadel serve" in " ".join(service.get("command", []))
    }
    assert len(found) == 2, found
    return found


def citadel_services() -> dict[str, dict[str, Any]]:
    return {
        name: service
        for name, service in compose()["services"].items()
        if service.get("image", "").startswith("citadel")
    }


def interpolated(value: str) -> str:
    """``value`` as compose would give it with the required secrets set."""
    return re.sub(r"\$\{(\w+)(:\?[^}]*)?\}", lambda m: SECRET, value)


def test_every_variable_compose_gives_citadel_is_one_citadel_knows() -> None:
    named = {
        name for service in citadel_services().values() for name in service.get("environment", {})
    }
    commented = set(
        re.findall(
            r"^\s*#\s*((?:CITADEL|OTEL)_[A-Z0-9_]+):", COMPOSE.read_text(encoding="utf-8"), re.M
        )
    )
    assert named and commented
    assert sorted(n for n in named | commented if not is_known_variable(n)) == []


def test_the_two_servers_share_the_database_and_secrets_with_values_citadel_accepts() -> None:
    environments = [service["environment"] for service in servers().values()]
    assert environments[0] == environments[1]
    env = {name: interpolated(str(value)) for name, value in environments[0].items()}
    settings = Settings.from_env(env)
    assert settings.postgres_url is not None
    assert (
        settings.link_secret.get_secret_value() and settings.http.session_secret.get_secret_value()
    )
    database = compose()["services"]["postgres"]
    assert database["image"].startswith("pgvector/pgvector:")
    user, name = database["environment"]["POSTGRES_USER"], database["environment"]["POSTGRES_DB"]
    assert settings.postgres_url == f"postgresql://{user}:{SECRET}@postgres:5432/{name}"
    for service in servers().values():
        assert service["depends_on"]["postgres"] == {"condition": "service_healthy"}


def test_each_server_serves_on_the_default_port_from_a_home_of_its_own_with_the_one_key() -> None:
    homes, keys = set(), set()
    for service in servers().values():
        script = service["command"][-1]
        copy, _, serve = script.partition(";")
        argv = shlex.split(serve.replace("$$", "$"))
        assert argv[0] == "exec"
        params = parsed(argv[1:])
        assert (params["host"], params["port"]) == ("0.0.0.0", default_port())
        (published,) = service["ports"]
        assert published.endswith(f":{default_port()}")
        mounts = dict(reversed(m.split(":", 2)[:2]) for m in service["volumes"])
        homes.add(mounts["/data"])
        keys.add(mounts["/keys"])
        assert "install -m 600 /keys/audit.key" in copy and "$$CITADEL_HOME/audit.key" in copy
    assert len(homes) == 2  # uploads and the originals cache are each server's own
    assert len(keys) == 1
    maker = compose()["services"]["audit-key"]
    assert any(m.startswith(f"{next(iter(keys))}:") for m in maker["volumes"])
    assert "head -c 32 /dev/urandom" in maker["command"][-1]
    for service in servers().values():
        assert service["depends_on"]["audit-key"] == {"condition": "service_completed_successfully"}


@pytest.mark.parametrize("path", [".venv", ".git", ".citadel", ".venv-bench", ".citadel-demo"])
def test_the_build_context_leaves_out_environments_history_and_homes(path: str) -> None:
    patterns = [
        line.strip()
        for line in IGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert any(fnmatch.fnmatch(path, pattern) for pattern in patterns)
    for needed in ("pyproject.toml", "README.md", "LICENSE", "src"):
        assert not any(fnmatch.fnmatch(needed, pattern) for pattern in patterns)


def test_the_deployment_guide_says_how_to_build_and_run_them() -> None:
    guide = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    for words in ("docker build", "docker compose up", "compose.yaml", "Dockerfile"):
        assert words in guide
    assert "docs/deployment.md" in (ROOT / "README.md").read_text(encoding="utf-8")
