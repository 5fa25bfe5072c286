"""One write rule for every entrypoint: writing a version needs the right to change the ACL.

The use case decides (``IngestService`` with ``citadel.app.library.writable``);
the CLI and the HTTP upload only pass the actor. Reproductions of the security
review's defects 1 (a new version widened access), 3 (re-ingest under a deleted
id crashed), 8 (existence leaks) and 11 (source ids were not validated).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from citadel.app.errors import IngestError
from citadel.app.ingest import IngestOptions
from citadel.domain.users import Role
from citadel.entrypoints.cli import app as cli_app
from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.http.conftest import SECRET, Library, bearer, make_library
from tests.integration.test_cli import CLEAN_ENV, registry

BOOK = "# Runbook\n\n## Restarts\n\nRestart the workers one at a time after a deploy.\n"
BAD_IDS = ["a/b?c#d%2f", "../../etc", "x" * 5000, "bad\x00id", "tab\tid", ".hidden", "", "ü"]


def cli(*args: str) -> Any:
    return CliRunner().invoke(cli_app, list(args), env=CLEAN_ENV, catch_exceptions=False)


def json_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def add_user(home: Path, name: str, role: str, groups: str = "") -> None:
    args = ["users", "add", name, "--role", role, "--home", str(home)]
    if groups:
        args += ["--groups", groups]
    assert cli(*args).exit_code == 0


# -- CLI ----------------------------------------------------------------------------------


def test_a_new_version_keeps_the_sources_acl_unless_one_is_given(tmp_path: Path) -> None:
    """Defect 1: `ingest --acl ops`, append a line, `ingest` again -> still ops only."""
    home, book = tmp_path / "home", tmp_path / "book.md"
    book.write_text(BOOK)
    first = json_lines(
        cli("ingest", str(book), "--acl", "ops", "--json", "--home", str(home)).stdout
    )
    source_id = first[0]["source_id"]
    book.write_text(BOOK + "\nDrain the queue before each restart.\n")
    second = json_lines(cli("ingest", str(book), "--json", "--home", str(home)).stdout)
    assert (second[0]["status"], second[0]["version"]) == ("updated", 2)
    shown = json.loads(cli("sources", "show", source_id, "--json", "--home", str(home)).stdout)
    assert shown["acl_groups"] == ["ops"]

    add_user(home, "rita", "reader")
    listed = cli("sources", "list", "--json", "--as", "rita", "--home", str(home))
    assert source_id not in listed.stdout
    for version in ("1", "2"):
        read = cli(
            "sources",
            "chunks",
            source_id,
            "--version",
            version,
            "--as",
            "rita",
            "--home",
            str(home),
        )
        assert read.exit_code == 1
        assert "Restart the workers" not in read.stdout

    # Said explicitly, an ACL applies: to a new version, and to unchanged text too.
    opened = cli("ingest", str(book), "--acl", "", "--json", "--home", str(home))
    assert json_lines(opened.stdout)[0]["status"] == "unchanged"
    assert source_id in cli("sources", "list", "--json", "--as", "rita", "--home", str(home)).stdout


def test_reingest_under_a_deleted_id_is_a_per_file_refusal_and_the_batch_goes_on(
    tmp_path: Path,
) -> None:
    """Defect 3: it was an IntegrityError traceback that stopped the batch."""
    home = tmp_path / "home"
    a, b, c = (tmp_path / f"{n}.md" for n in "abc")
    a.write_text(BOOK)
    b.write_text("# Other\n\nA different book about tides and harbours.\n")
    c.write_text("# Third\n\nA third book about lighthouses.\n")
    assert cli("ingest", str(a), "--source-id", "X", "--home", str(home)).exit_code == 0
    assert cli("sources", "delete", "X", "--home", str(home)).exit_code == 0
    (tmp_path / "b.md.citadel.json").write_text(json.dumps({"source_id": "X"}))
    outcome = cli("ingest", str(b), str(c), "--json", "--home", str(home))
    assert outcome.exit_code == 1
    lines = json_lines(outcome.stdout)
    assert [(line["status"], line.get("reason")) for line in lines] == [
        ("failed", "id_unavailable"),
        ("created", None),
    ]
    assert "Traceback" not in outcome.output
    library = registry(home)
    tombstone = library.get("default", "X")
    library.close()
    assert tombstone is not None and tombstone.deleted and tombstone.current_version == 1


@pytest.mark.parametrize("bad", BAD_IDS)
def test_a_source_id_no_link_could_carry_is_refused_before_anything_is_written(
    tmp_path: Path, bad: str
) -> None:
    """Defect 11 (CLI): ids with slashes, dots, control characters or 5,000 characters."""
    home, book = tmp_path / "home", tmp_path / "book.md"
    book.write_text(BOOK)
    outcome = cli("ingest", str(book), "--source-id", bad, "--json", "--home", str(home))
    assert outcome.exit_code == 1
    assert json_lines(outcome.stdout)[0]["reason"] == "invalid_source_id"
    assert cli("sources", "list", "--json", "--home", str(home)).stdout.strip() in ("", "[]")


# -- HTTP ---------------------------------------------------------------------------------


@pytest.fixture
def web(tmp_path: Path) -> Iterator[tuple[TestClient, Library]]:
    library = make_library(tmp_path / "home")
    services = library.services
    _, library.tokens["ops-lib"] = services.users.add(
        "ops-lib", Role.LIBRARIAN, "default", frozenset({"ops"})
    )
    _, library.tokens["other-lib"] = services.users.add("other-lib", Role.LIBRARIAN, "other")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nThe launch codes rotate every Tuesday at noon.\n")
    services.ingest.ingest(
        services.documents.open(secret),
        IngestOptions(source_id="secret", acl_groups=frozenset({"ops"})),
        actor=operator(),
    )
    with TestClient(create_app(services, session_secret=SECRET)) as client:
        yield client, library
    services.close()


def upload(
    client: TestClient, library: Library, who: str, data: bytes, **fields: str
) -> dict[str, Any]:
    reply = client.post(
        "/v1/sources",
        files={"file": ("upload.md", io.BytesIO(data), "text/markdown")},
        data=fields,
        headers=bearer(library, who),
    )
    body: dict[str, Any] = reply.json()
    body["status_code"] = reply.status_code
    return body


def test_a_librarian_who_cannot_read_a_source_cannot_write_a_version_of_it(
    web: tuple[TestClient, Library],
) -> None:
    """Defect 1 over HTTP: `-F source_id=secret` made v2 with ACL [] (201)."""
    client, library = web
    refused = upload(client, library, "lib", b"# Mine\n\nNew text.\n", source_id="secret")
    assert refused["status_code"] == 422
    assert refused["error"]["reason"] == "id_unavailable"
    source = library.services.registry.get("default", "secret")
    assert source is not None
    assert (source.current_version, source.acl_groups) == (1, frozenset({"ops"}))
    # The same right as `sources acl`: a librarian in ops may write it, and keeps ops.
    allowed = upload(client, library, "ops-lib", b"# Secret\n\nNew codes.\n", source_id="secret")
    assert (allowed["status_code"], allowed["status"], allowed["version"]) == (201, "updated", 2)
    source = library.services.registry.get("default", "secret")
    assert source is not None and source.acl_groups == frozenset({"ops"})


def test_another_tenants_id_is_created_in_the_callers_tenant_and_a_deleted_id_is_refused(
    web: tuple[TestClient, Library],
) -> None:
    """Defect 8: "that source id belongs to another tenant" told who holds the id, and
    then "cannot be used here" still did. Source ids are scoped to their tenant: the
    other tenant's upload of ``secret`` makes its own source, default's is untouched;
    within one tenant a deleted id and an unreadable one are refused alike."""
    client, library = web
    theirs = upload(client, library, "other-lib", b"# Theirs\n\nText.\n", source_id="secret")
    assert (theirs["status_code"], theirs["status"], theirs["version"]) == (201, "created", 1)
    assert theirs["source_id"] == "secret"
    registry = library.services.registry
    other, ours = registry.get("other", "secret"), registry.get("default", "secret")
    assert other is not None and (other.title, other.acl_groups) == ("Theirs", frozenset())
    assert ours is not None and ours.title == "Secret" and ours.current_version == 1
    assert ours.acl_groups == frozenset({"ops"})
    upload(client, library, "lib", b"# Gone\n\nSoon deleted.\n", source_id="gone")
    library.services.library.delete("gone", operator())
    deleted = upload(client, library, "lib", b"# Back\n\nRevived.\n", source_id="gone")
    restricted = upload(client, library, "lib", b"# Mine\n\nText.\n", source_id="secret")
    answers = [deleted, restricted]
    assert {a["status_code"] for a in answers} == {422}
    assert {a["error"]["reason"] for a in answers} == {"id_unavailable"}
    messages = {
        a["error"]["message"].replace("gone", "ID").replace("secret", "ID") for a in answers
    }
    assert len(messages) == 1, messages
    assert "tenant" not in messages.pop()
    # The id deleted in default is free in other.
    elsewhere = upload(client, library, "other-lib", b"# Gone\n\nTheirs.\n", source_id="gone")
    assert (elsewhere["status_code"], elsewhere["status"]) == (201, "created")


def test_identical_content_in_a_source_you_cannot_read_is_not_there_for_you(
    web: tuple[TestClient, Library],
) -> None:
    """Defect 8: a librarian outside the ACL got `unchanged` with the secret's id and title."""
    client, library = web
    same = b"# Secret\n\nThe launch codes rotate every Tuesday at noon.\n"
    inside = upload(client, library, "ops-lib", same)
    assert (inside["status"], inside["source_id"]) == ("unchanged", "secret")
    reply = upload(client, library, "lib", same)
    assert (reply["status_code"], reply["status"]) == (201, "created")
    assert reply["source_id"] != "secret"


@pytest.mark.parametrize("bad", [b for b in BAD_IDS if b and "\x00" not in b])
def test_an_upload_with_an_invalid_source_id_is_refused(
    web: tuple[TestClient, Library], bad: str
) -> None:
    """Defect 11 over HTTP; reads of such an id are a plain 404."""
    client, library = web
    reply = upload(client, library, "lib", b"# Doc\n\nSome text.\n", source_id=bad)
    assert reply["status_code"] == 422
    assert reply["error"]["reason"] == "invalid_source_id"
    assert all(s.source_id != bad for s in library.services.registry.list())


def test_reads_of_an_invalid_source_id_are_not_found(web: tuple[TestClient, Library]) -> None:
    client, library = web
    for bad in ("..", "a%2Fb", "x" * 300):
        reply = client.get(f"/v1/sources/{bad}", headers=bearer(library, "root"))
        assert reply.status_code == 404, (bad, reply.text)


# -- the use case -------------------------------------------------------------------------


def test_readers_and_other_tenants_may_not_ingest(tmp_path: Path) -> None:
    library = make_library(tmp_path / "home")
    book = tmp_path / "book.md"
    book.write_text(BOOK)
    reader = library.services.users.actor("ada")
    stranger = library.services.users.actor("eve")
    with pytest.raises(IngestError) as as_reader:
        library.services.ingest.ingest(
            library.services.documents.open(book), IngestOptions(), actor=reader
        )
    with pytest.raises(IngestError) as elsewhere:
        library.services.ingest.ingest(
            library.services.documents.open(book), IngestOptions(tenant="default"), actor=stranger
        )
    assert (as_reader.value.reason, elsewhere.value.reason) == ("forbidden", "forbidden")
    assert [s.source_id for s in library.services.registry.list()] == [library.source_id]
    library.services.close()
