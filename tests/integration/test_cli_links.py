"""Links a terminal user can open: the footnotes of ``citadel ask`` and the line of
``citadel citation`` carry the printed page and a viewer link signed for the user
named by ``--as``, whole under ``CITADEL_PUBLIC_URL``. The link opens in the web UI
for that user signed in, and for no one else; nothing is linked that the named user
may not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from click.testing import Result
from fastapi import FastAPI
from typer.testing import CliRunner

from citadel.app.ingest import IngestOptions
from citadel.entrypoints.cli import app as cli_app
from citadel.entrypoints.cli.text import VIEWER_HINT
from citadel.entrypoints.http import create_app
from citadel.entrypoints.present.public_links import RELATIVE_NOTE
from tests.builders import operator
from tests.http.conftest import SECRET, Library, browser, make_library, sign_in
from tests.http.pdf_sample import write_pdf
from tests.integration.test_cli import CLEAN_ENV

PUBLIC = "https://citadel.test"
QUESTION = "How do the kestrel rotor bearings get greased?"
PAGES = [
    ["Kestrel Manual", "The kestrel manual opens with its table of contents."],
    [
        "Maintenance",
        "Grease the kestrel rotor bearings every forty hours of flight with lithium grease.",
    ],
]
LINK = re.compile(r"^\s+(\S*/v1/sources/\S+token=\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    home = tmp_path_factory.mktemp("links")
    lib = make_library(home)
    services = lib.services
    pdf = write_pdf(home / "kestrel.pdf", PAGES)
    services.ingest.ingest(
        services.documents.open(pdf), IngestOptions(tenant="default"), actor=operator("default")
    )
    secret = home / "secret.md"
    secret.write_text("# Kestrel secrets\n\nThe kestrel rotor bearings hide a key.\n")
    services.ingest.ingest(
        services.documents.open(secret),
        IngestOptions(tenant="default", acl_groups=frozenset({"board"})),
        actor=operator("default"),
    )
    yield lib
    lib.services.close()


@pytest.fixture(scope="module")
def web(library: Library) -> FastAPI:
    return create_app(library.services, session_secret=SECRET)


def cli(library: Library, *args: str, public_url: str | None = PUBLIC) -> Result:
    env = dict(
        CLEAN_ENV,
        CITADEL_EMBEDDER="hashing",
        CITADEL_RELEVANCE="off",
        CITADEL_PUBLIC_URL=public_url,
    )
    outcome = CliRunner().invoke(
        cli_app, [args[0], "--home", str(library.home), *args[1:]], env=env
    )
    assert outcome.exit_code == 0, outcome.output
    return outcome


def opens_for(web: FastAPI, library: Library, user: str, link: str) -> int:
    with browser(web) as client:
        sign_in(client, library, user)
        return client.get(link.removeprefix(PUBLIC)).status_code


def test_a_footnote_names_the_printed_page_and_a_link_the_named_user_opens(
    library: Library, web: FastAPI
) -> None:
    shown = cli(library, "ask", "--as", "ada", QUESTION).stdout
    footnote = next(line for line in shown.splitlines() if "cited" in line and "Kestrel" in line)
    assert "p. 2" in footnote
    [link, *_] = LINK.findall(shown)
    assert link.startswith(PUBLIC + "/v1/sources/")
    assert RELATIVE_NOTE not in shown and VIEWER_HINT not in shown
    assert opens_for(web, library, "ada", link) == 200
    # Signed for ada: another reader of the same tenant, who may read the book, is refused.
    assert opens_for(web, library, "lib", link) == 403


def test_without_a_public_url_the_link_is_a_route_with_a_note(library: Library) -> None:
    shown = cli(library, "ask", "--as", "ada", QUESTION, public_url=None).stdout
    [link, *_] = LINK.findall(shown)
    assert link.startswith("/v1/sources/")
    assert RELATIVE_NOTE in shown


def test_the_local_administrator_gets_no_link_it_cannot_open_and_is_told_why(
    library: Library,
) -> None:
    shown = cli(library, "ask", QUESTION).stdout
    assert "token=" not in shown
    assert VIEWER_HINT in shown


def test_citation_prints_the_named_users_link_whole(library: Library, web: FastAPI) -> None:
    answer_id = json.loads(cli(library, "ask", "--json", "--as", "ada", QUESTION).stdout)[
        "answer_id"
    ]
    line = cli(library, "citation", "--as", "ada", answer_id, "E1").stdout
    state, _, link = line.splitlines()[0].removeprefix("E1: ").partition(" ")
    assert state == "viewer" and link.startswith(PUBLIC + "/v1/sources/")
    assert opens_for(web, library, "ada", link) == 200
    assert opens_for(web, library, "root", link) == 403
    # The local administrator's line says how to get a link instead of printing one.
    local = cli(library, "citation", answer_id, "E1").stdout
    assert "token=" not in local and VIEWER_HINT in local


def test_no_link_is_made_for_a_passage_the_named_user_may_not_read(library: Library) -> None:
    # The administrator's answer cites the board's note; ada is not on the board.
    asked = json.loads(
        cli(library, "ask", "--json", "Where do the kestrel secrets hide a key?").stdout
    )
    assert asked["answer"] is not None, asked["degraded"]
    [ref, *_] = [
        c["ref"]
        for s in asked["answer"]["segments"]
        for c in s["citations"]
        if c["title"] == "Kestrel secrets"
    ]
    env = dict(
        CLEAN_ENV, CITADEL_EMBEDDER="hashing", CITADEL_RELEVANCE="off", CITADEL_PUBLIC_URL=PUBLIC
    )
    shown = CliRunner().invoke(
        cli_app,
        ["citation", "--home", str(library.home), "--as", "ada", asked["answer_id"], ref],
        env=env,
    )
    assert "token=" not in shown.output and "Kestrel secrets" not in shown.output
