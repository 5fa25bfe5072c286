"""One contract for the IncomingDocument port (and the DocumentReader that hands them
out), run against every implementation the ingest use case is given.

As ``citadel.app.ports.documents`` describes them. An ``IncomingDocument`` has a
``shown`` name (the path as given, an upload's file name), an ``origin`` (where it is
kept: the resolved path; none for an upload) and ``metadata`` (its sidecar's fields,
``None`` for an upload or a parsed corpus), the same on every read; it is not parsed
until asked, ``parse`` gives the document as it is then, and a refusal is an
``IngestError`` naming ``shown`` (``unsupported`` when no parser takes it, else the
parser's reason). A ``DocumentReader`` refuses a missing, empty or over-limit file
(``not_found``, ``empty``, ``too_large``) and a malformed sidecar (``bad_sidecar``,
naming the sidecar), and an upload never reads a sidecar beside it.

The implementations: ``FileDocuments.open`` (the CLI, the demo, the answer
evaluation), ``FileDocuments.received`` (HTTP uploads: ``POST /v1/sources`` and the
web library page), ``ParsedInput`` (the BEIR corpus) and the metering wrapper the
ingest use case passes on (``app/ingest/metering.py``). No fake in ``tests/fakes``
implements the port. A new implementation joins by adding a case to ``CASES``
(and to ``FILE_CASES`` when it reads a file).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from citadel.adapters.files import FileDocuments, sidecar_path
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.parsers.plaintext import PlainTextParser
from citadel.app.errors import IngestError
from citadel.app.ingest import ParsedInput
from citadel.app.ingest.metering import _Observed
from citadel.app.ports import DocumentMetadata, IncomingDocument
from citadel.domain.document import Block, ParsedDocument

LIMIT = 4096
READER = FileDocuments([MarkdownParser(), PlainTextParser()], max_file_bytes=LIMIT)
BOOK = "# Tides\n\nThe harbour lists high water twice a day.\n"
SIDECAR = {"title": "Tide Tables", "authors": ["A. Mariner"], "year": 1999, "acl": ["crew"]}
UPLOAD_NAME = "Tide Tables.md"


@dataclass(frozen=True)
class Case:
    """A document offered for ingestion and what the port says it must show."""

    document: IncomingDocument
    shown: str
    origin: str
    metadata: DocumentMetadata | None
    path: Path | None
    """The file it reads, when it reads one (``None``: parsed already)."""


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def with_sidecar(path: Path) -> Path:
    write(sidecar_path(path), json.dumps(SIDECAR))
    return path


def opened(tmp_path: Path, name: str = "tides.md", text: str | bytes = BOOK) -> Case:
    path = with_sidecar(write(tmp_path / "library" / name, text))
    expected = DocumentMetadata(
        title="Tide Tables",
        authors=("A. Mariner",),
        year=1999,
        acl_groups=frozenset({"crew"}),
    )
    return Case(READER.open(path), str(path), str(path.resolve()), expected, path)


def uploaded(tmp_path: Path, name: str = "tides.md", text: str | bytes = BOOK) -> Case:
    # Spooled under a name of the server's own, with the upload's extension; a
    # sidecar beside the spool file is not the uploader's and is never read.
    suffix = Path(name).suffix
    path = with_sidecar(write(tmp_path / "spool" / f"upload-7f3a{suffix}", text))
    shown = UPLOAD_NAME if suffix == ".md" else f"Upload{suffix}"
    return Case(READER.received(path, name=shown), shown, "", None, path)


def metered(tmp_path: Path, name: str = "tides.md", text: str | bytes = BOOK) -> Case:
    inner = opened(tmp_path, name, text)
    return Case(_Observed(inner.document), inner.shown, inner.origin, inner.metadata, inner.path)


def parsed(tmp_path: Path) -> Case:
    document = ParsedDocument(
        title="Tides",
        blocks=(Block(text="The harbour lists high water twice a day.", section_path=("Tides",)),),
        parser="beir/1",
    )
    return Case(ParsedInput(document, "beir:doc-17"), "beir:doc-17", "beir:doc-17", None, None)


FILE_CASES: dict[str, Callable[..., Case]] = {
    "file": opened,
    "upload": uploaded,
    "metered": metered,
}
CASES: dict[str, Callable[[Path], Case]] = {**FILE_CASES, "parsed": parsed}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    return CASES[request.param](tmp_path)


@pytest.fixture(params=sorted(FILE_CASES))
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Case]:
    return lambda name="tides.md", text=BOOK: FILE_CASES[request.param](tmp_path, name, text)


def text_of(document: ParsedDocument) -> str:
    return "\n".join(block.text for block in document.blocks)


# --- every implementation ----------------------------------------------------


def test_shown_origin_and_metadata_are_as_documented_on_every_read(case: Case) -> None:
    for _ in range(2):
        assert case.document.shown == case.shown
        assert case.document.origin == case.origin
        assert case.document.metadata == case.metadata


def test_parse_gives_the_document_and_the_same_one_again(case: Case) -> None:
    first = case.document.parse()
    assert "high water twice a day" in text_of(first)
    assert case.document.parse() == first


def test_progress_counts_up_to_its_total(case: Case) -> None:
    calls: list[tuple[int, int]] = []
    case.document.parse(lambda done, total: calls.append((done, total)))
    assert all(0 <= done <= total for done, total in calls)


# --- what reads a file -------------------------------------------------------


def test_nothing_is_parsed_until_asked(make: Callable[..., Case]) -> None:
    # Offered whole: a kind of file no parser takes is refused by parse, not before.
    case = make("tides.xyz", "no parser reads this")
    with pytest.raises(IngestError) as caught:
        case.document.parse()
    assert (caught.value.path, caught.value.reason) == (case.shown, "unsupported")
    assert str(caught.value).startswith(f"{case.shown}: ")


def test_parse_reads_the_file_as_it_is_when_asked(make: Callable[..., Case]) -> None:
    case = make()
    assert case.path is not None
    write(case.path, "# Tides\n\nLow water follows six hours later.\n")
    assert "Low water follows" in text_of(case.document.parse())


def test_a_parsers_refusal_is_its_reason_naming_what_is_shown(make: Callable[..., Case]) -> None:
    case = make("tides.txt", b"tide\x00table")
    with pytest.raises(IngestError) as caught:
        case.document.parse()
    assert (caught.value.path, caught.value.reason) == (case.shown, "binary")
    assert case.path is not None
    if case.shown != str(case.path):  # an upload: its spool path is not the caller's
        assert str(case.path) not in str(caught.value)
        assert case.path.name not in str(caught.value)


# --- the reader: refusals before anything is offered -------------------------


Receive = Callable[[Path], IncomingDocument]
READS: dict[str, tuple[Receive, Callable[[Path], str]]] = {
    "open": (READER.open, str),
    "received": (lambda path: READER.received(path, name=UPLOAD_NAME), lambda _: UPLOAD_NAME),
}


@pytest.fixture(params=sorted(READS))
def read(request: pytest.FixtureRequest) -> tuple[Receive, Callable[[Path], str]]:
    return READS[request.param]


def refusal(receive: Receive, path: Path) -> IngestError:
    with pytest.raises(IngestError) as caught:
        receive(path)
    return caught.value


def test_a_missing_file_is_not_found(
    read: tuple[Receive, Callable[[Path], str]], tmp_path: Path
) -> None:
    receive, shown = read
    missing = tmp_path / "gone.md"
    error = refusal(receive, missing)
    assert (error.path, error.reason) == (shown(missing), "not_found")


def test_an_empty_file_is_empty(
    read: tuple[Receive, Callable[[Path], str]], tmp_path: Path
) -> None:
    receive, shown = read
    empty = write(tmp_path / "empty.md", "")
    error = refusal(receive, empty)
    assert (error.path, error.reason) == (shown(empty), "empty")


def test_a_file_over_the_limit_is_too_large_and_one_at_it_is_not(
    read: tuple[Receive, Callable[[Path], str]], tmp_path: Path
) -> None:
    receive, shown = read
    at_limit = write(tmp_path / "at.md", "# T\n\n" + "a" * (LIMIT - 5))
    over = write(tmp_path / "over.md", "# T\n\n" + "a" * (LIMIT - 4))
    assert at_limit.stat().st_size == LIMIT
    assert "aaa" in text_of(receive(at_limit).parse())
    error = refusal(receive, over)
    assert (error.path, error.reason) == (shown(over), "too_large")
    assert str(LIMIT) in error.detail


@pytest.mark.parametrize(
    "sidecar",
    [
        "{not json",
        json.dumps(["a list"]),
        json.dumps({"title": "T", "isbn": "123"}),  # a field the manifest does not hold
        json.dumps({"year": "1999"}),
        json.dumps({"acl": "crew"}),
        json.dumps({"url": "   "}),
        '{"title": "A", "title": "B"}',  # a repeated key
    ],
)
def test_a_malformed_sidecar_is_refused_naming_the_sidecar(tmp_path: Path, sidecar: str) -> None:
    book = write(tmp_path / "tides.md", BOOK)
    beside = write(sidecar_path(book), sidecar)
    error = refusal(READER.open, book)
    assert (error.path, error.reason) == (str(beside), "bad_sidecar")
    # An upload never reads one: the same file received is accepted, with no metadata.
    assert READER.received(book, name=UPLOAD_NAME).metadata is None


def test_a_file_without_a_sidecar_has_no_metadata(tmp_path: Path) -> None:
    assert READER.open(write(tmp_path / "tides.md", BOOK)).metadata is None


def test_the_origin_is_where_the_file_is_whatever_path_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = write(tmp_path / "shelf" / "tides.md", BOOK)
    link = tmp_path / "tides-link.md"
    os.symlink(book, link)
    monkeypatch.chdir(tmp_path)
    by = {
        "absolute": READER.open(book),
        "relative": READER.open(Path("shelf/tides.md")),
        "dotted": READER.open(Path("shelf/../shelf/tides.md")),
        "linked": READER.open(link),
    }
    assert {document.origin for document in by.values()} == {str(book.resolve())}
    assert by["relative"].shown == "shelf/tides.md"  # shown as given
    assert by["dotted"].shown == "shelf/../shelf/tides.md"
