"""One contract for the DocumentParser port, run against every parser adapter on real inputs.

Each adapter is a ``ParserCase`` (how to build it, a file suffix it reads, and which
addresses its format has: physical pages with printed labels, or locations inside the
document); each input is a ``Sample`` — a small file written for the test, or a real book
from ../shared/books, parsed once per module. Both live in ``parser_samples.py``: a new
parser joins by adding its case and samples there; no test here changes.

What every parser promises, whatever its format:

* ``accepts`` is true for its own inputs, false for every other format's, and never raises;
* ``parse`` returns a ``ParsedDocument`` named for the parser, with a title and body blocks
  of stripped, non-blank text under a non-empty section path;
* sections come in reading order and do not overlap: each section path is one run of
  blocks, each page or document part is read once, pages never go backwards; in the
  canonical text every section's span follows the previous one and every chunk's offsets
  lie inside the text and inside its own section;
* printed page labels (and 1-based pages within ``page_count``) only where the format has
  them, locations only where it has them, and no block on a skipped page;
* contents and index pages are not indexed;
* progress is reported as (done, total), never backwards, ending at done == total;
* parsing is deterministic and the progress callback changes nothing;
* a file the parser accepts but cannot read (empty, or not its format at all) is refused
  with ``ParseError`` carrying a stable reason code and a message (for a parser of
  folders, a folder holding such a file).
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from citadel.app.errors import ParseError
from citadel.app.ingest.metering import FORMATS
from citadel.app.ports import DocumentParser
from citadel.bootstrap.families import PARSERS
from citadel.domain.chunking import canonical_text, chunk_blocks
from citadel.domain.document import Block, ParsedDocument
from tests.conftest import SHARED
from tests.contract.parser_samples import CASES, SAMPLES, ParserCase, Sample


@dataclass(frozen=True)
class Parsed:
    sample: Sample
    path: Path
    document: ParsedDocument
    progress: tuple[tuple[int, int], ...]


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(s, id=s.name, marks=[pytest.mark.shared] if s.book else []) for s in SAMPLES
    ],
)
def parsed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Parsed:
    """Each sample parsed once, with its progress reports recorded."""
    sample: Sample = request.param
    path = sample.locate(tmp_path_factory.mktemp(sample.name))
    calls: list[tuple[int, int]] = []
    document = sample.case.make().parse(path, lambda done, total: calls.append((done, total)))
    return Parsed(sample, path, document, tuple(calls))


def _runs(keys: list[object]) -> list[object]:
    """Consecutive equal keys collapsed to one."""
    runs: list[object] = []
    for key in keys:
        if not runs or runs[-1] != key:
            runs.append(key)
    return runs


def _part(block: Block) -> str:
    return (block.location or "").split("#", 1)[0]


# --- accepts ----------------------------------------------------------------------------------


def test_a_parser_accepts_its_own_inputs(parsed: Parsed) -> None:
    assert parsed.sample.case.make().accepts(parsed.path)


def test_every_parser_of_the_composition_root_has_a_case_and_a_counted_format() -> None:
    """Each row of ``PARSERS`` is under this contract, keyed by its parser's family,
    which ingest's metrics count (``app/ingest/metering.py``)."""
    assert [case.id for case in CASES] == list(PARSERS)
    for case in CASES:
        assert case.make().name.split("/", 1)[0] == case.id
        assert case.id in FORMATS


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_parser_accepts_no_other_formats_inputs(case: ParserCase, tmp_path: Path) -> None:
    parser = case.make()
    for sample in SAMPLES:
        if sample.case is case or (sample.book and not SHARED.joinpath(*sample.shared).exists()):
            continue
        scratch = tmp_path / sample.name
        scratch.mkdir()
        assert not parser.accepts(sample.locate(scratch)), f"{case.id} claims {sample.name}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_accepts_is_false_for_a_missing_file_and_an_empty_directory(
    case: ParserCase, tmp_path: Path
) -> None:
    parser = case.make()
    assert not parser.accepts(tmp_path / f"missing{case.suffix}")
    assert not parser.accepts(tmp_path)


# --- the document -----------------------------------------------------------------------------

_PARSER_NAME = re.compile(r"^[a-z][a-z0-9-]*/\d+$")  # a versioned name, kept in every record


def test_parse_returns_a_document_named_for_the_parser(parsed: Parsed) -> None:
    doc = parsed.document
    assert isinstance(doc, ParsedDocument)
    assert doc.parser == parsed.sample.case.make().name
    assert _PARSER_NAME.match(doc.parser)
    assert doc.title.strip() and doc.title == doc.title.strip()
    for names in (doc.authors, doc.tags):
        assert isinstance(names, tuple)
        assert all(isinstance(n, str) and n.strip() for n in names)
        assert len(set(names)) == len(names)
    assert doc.year is None or 1000 <= doc.year <= 2999


def test_blocks_hold_stripped_body_text_under_a_section_path(parsed: Parsed) -> None:
    blocks = parsed.document.blocks
    assert isinstance(blocks, tuple) and blocks
    for block in blocks:
        assert isinstance(block, Block)
        assert block.text.strip() and block.text == block.text.strip()
        assert "\x00" not in block.text
        assert isinstance(block.section_path, tuple) and block.section_path
        assert all(part.strip() and part == part.strip() for part in block.section_path)


def test_sections_come_in_reading_order_and_do_not_overlap(parsed: Parsed) -> None:
    blocks = parsed.document.blocks
    paths = _runs([b.section_path for b in blocks])
    assert len(paths) == len(set(paths)), "a section resumes after another one began"
    parts = _runs([_part(b) for b in blocks])
    assert len(parts) == len(set(parts)), "a page or document part is read twice"
    pages = [b.page for b in blocks if b.page is not None]
    assert pages == sorted(pages), "pages go backwards"


def test_section_and_chunk_offsets_lie_inside_the_text(parsed: Parsed) -> None:
    blocks = parsed.document.blocks
    canon, chunks = chunk_blocks(blocks, "contract-source", 1, tenant="default")
    assert canon == canonical_text(blocks)
    assert len(canon.spans) == len(blocks)
    for (start, end), block in zip(canon.spans, blocks, strict=True):
        assert canon.text[start:end] == block.text
    sections: dict[tuple[str, ...], tuple[int, int]] = {}
    for (start, end), block in zip(canon.spans, blocks, strict=True):
        first, _ = sections.get(block.section_path, (start, end))
        sections[block.section_path] = (first, end)
    spans = list(sections.values())
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    assert chunks, "a document with body text yields chunks"
    for chunk in chunks:
        assert 0 <= chunk.char_start < chunk.char_end <= len(canon.text)
        assert canon.text[chunk.char_start : chunk.char_end] == chunk.text
        start, end = sections[chunk.section_path]
        assert start <= chunk.char_start and chunk.char_end <= end, "a chunk leaves its section"


def test_printed_page_labels_only_where_the_format_has_them(parsed: Parsed) -> None:
    case, doc = parsed.sample.case, parsed.document
    for block in doc.blocks:
        if case.paged:
            assert block.page is not None and 1 <= block.page <= doc.page_count
            assert block.page_label is not None and block.page_label.strip()
        else:
            assert block.page is None and block.page_label is None
        if case.located:
            assert block.location is not None and _part(block)
        else:
            assert block.location is None


def test_skipped_pages_are_real_pages_without_blocks(parsed: Parsed) -> None:
    doc = parsed.document
    skipped = doc.skipped_pages
    assert list(skipped) == sorted(set(skipped))
    assert all(1 <= page <= doc.page_count for page in skipped)
    assert not {b.page for b in doc.blocks} & set(skipped)


_FRONT_AND_BACK_MATTER = re.compile(
    r"^(?:(?:\d+|[IVXLC]+|[A-Z])\.?\s+)?(?i:table of contents|contents"
    r"|(?:general |subject )?index|list of (?:figures|tables))$"
)


def test_contents_and_index_are_not_indexed(parsed: Parsed) -> None:
    titles = {part for b in parsed.document.blocks for part in b.section_path}
    assert not [t for t in titles if _FRONT_AND_BACK_MATTER.match(t)]


def test_progress_is_reported_as_done_of_total_up_to_the_end(parsed: Parsed) -> None:
    calls = parsed.progress
    assert calls, "no progress was reported"
    assert all(0 <= done <= total and total > 0 for done, total in calls)
    dones = [done for done, _ in calls]
    assert dones == sorted(dones), "progress goes backwards"
    assert calls[-1][0] == calls[-1][1]


@pytest.mark.parametrize("sample", [s for s in SAMPLES if not s.book], ids=lambda s: s.name)
def test_parsing_is_deterministic_and_progress_changes_nothing(
    sample: Sample, tmp_path: Path
) -> None:
    path = sample.locate(tmp_path)
    parser = sample.case.make()
    quiet = parser.parse(path)
    assert parser.parse(path, lambda done, total: None) == quiet
    assert sample.case.make().parse(path) == quiet


# --- refusals ---------------------------------------------------------------------------------

_REASON = re.compile(r"^[a-z][a-z0-9_]*$")


def _refused(parser: DocumentParser, path: Path) -> ParseError:
    assert parser.accepts(path), "the refusal is only meaningful for a file the parser accepts"
    with pytest.raises(ParseError) as caught:
        parser.parse(path)
    assert _REASON.match(caught.value.reason), caught.value.reason
    assert str(caught.value).strip()
    return caught.value


_EMPTY_IS_A_DOCUMENT = pytest.mark.xfail(
    strict=True,
    raises=pytest.fail.Exception,
    reason="returns a document with no blocks for an empty file (ingest refuses such a "
    "document as no_text); a known gap, see ParserCase.refuses_empty",
)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c.id, marks=[] if c.refuses_empty else [_EMPTY_IS_A_DOCUMENT])
        for c in CASES
    ],
)
def test_an_empty_file_is_refused_with_a_reason(case: ParserCase, tmp_path: Path) -> None:
    _refused(case.make(), case.write(tmp_path, "empty", b""))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_an_empty_file_never_yields_text(case: ParserCase, tmp_path: Path) -> None:
    path = case.write(tmp_path, "empty", b"")
    try:
        doc = case.make().parse(path)
    except ParseError:
        return
    assert not doc.blocks


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_file_that_is_not_its_format_is_refused_with_a_reason(
    case: ParserCase, tmp_path: Path
) -> None:
    path = case.write(tmp_path, "noise", b"\x00\xff" + random.Random(13).randbytes(4096))
    _refused(case.make(), path)
