"""Freezing the manifest: refs E1..En in selection order, a deterministic hash, no ids leaked."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re

import pytest

from citadel.domain.limits import Limits
from citadel.domain.manifest import (
    ContextEvidence,
    PromptEvidence,
    freeze_manifest,
    manifest_entries,
    manifest_hash,
    manifest_rows,
    prompt_evidence,
)
from citadel.domain.search import Evidence
from citadel.domain.selection import select_evidence
from tests.builders import make_evidence


def context(*evidence: Evidence) -> tuple[ContextEvidence, ...]:
    return tuple(ContextEvidence(e) for e in evidence)


def three() -> list[Evidence]:
    return [
        make_evidence(
            f"evidence-{name}",
            f"Passage {name} about bounded retries.",
            source_id=f"src-{name}",
            chunk_id=f"chunk-{name}",
            section=name,
        )
        for name in ("xx", "yy", "zz")
    ]


def test_refs_are_e1_to_en_in_selection_order() -> None:
    ranked = [
        make_evidence("a1", "alpha one", section="A"),
        make_evidence("a2", "alpha two", section="A"),
        make_evidence("b1", "bravo one", section="B"),
    ]
    selected = select_evidence(ranked, Limits())
    manifest = freeze_manifest(selected)
    # Diversity put b1 before a2, and the refs follow the selection, not the ranking.
    assert [(e.ref, e.evidence_id) for e in manifest.entries] == [
        ("E1", "a1"),
        ("E2", "b1"),
        ("E3", "a2"),
    ]
    assert manifest.refs() == frozenset({"E1", "E2", "E3"})


def test_entries_pin_source_version_chunk_and_content_hash() -> None:
    evidence = three()
    manifest = freeze_manifest(context(*evidence))
    for index, (entry, e) in enumerate(zip(manifest.entries, evidence, strict=True), start=1):
        assert entry.ref == f"E{index}"
        assert (entry.evidence_id, entry.source_id, entry.version, entry.chunk_id) == (
            e.evidence_id,
            e.source_id,
            e.version,
            e.chunk_id,
        )
        assert entry.content_sha256 == e.content_sha256
        assert manifest.entry(entry.ref) == entry
        assert manifest.evidence_for(entry.ref) == e


@pytest.mark.parametrize("ref", ["E0", "E4", "e1", " E1", "E01", "evidence-xx", ""])
def test_unknown_refs_resolve_to_nothing(ref: str) -> None:
    manifest = freeze_manifest(context(*three()))
    assert manifest.entry(ref) is None
    assert manifest.evidence_for(ref) is None
    assert ref not in manifest.refs()


def test_hash_is_deterministic_sha256() -> None:
    first = freeze_manifest(context(*three()))
    again = freeze_manifest(context(*three()))
    assert re.fullmatch(r"[0-9a-f]{64}", first.sha256)
    assert first.sha256 == again.sha256
    assert first == again


def test_the_hash_is_sha256_of_the_canonical_rows_as_one_json_array() -> None:
    # Pinned literally: audit records stored today must replay against tomorrow's code.
    e = make_evidence("ev-1", source_id="s-1", chunk_id="c-1", content_sha256="ab" * 32)
    manifest = freeze_manifest(context(e))
    written = (
        '[{"chunk_id":"c-1","content_sha256":"' + "ab" * 32 + '","evidence_id":"ev-1",'
        '"ref":"E1","source_id":"s-1","version":1}]'
    )
    assert manifest.sha256 == hashlib.sha256(written.encode()).hexdigest()
    assert list(manifest_rows(manifest.entries)) == json.loads(written)


def test_the_rows_the_audit_stores_read_back_to_the_same_entries_and_hash() -> None:
    manifest = freeze_manifest(context(*three()))
    stored = json.loads(json.dumps(manifest_rows(manifest.entries)))  # as an audit body holds them
    assert manifest_entries(stored) == manifest.entries
    assert manifest_hash(manifest_entries(stored)) == manifest.sha256


@pytest.mark.parametrize("row", [{}, {"ref": "E1"}, None, "E1"])
def test_a_malformed_stored_row_is_refused(row: object) -> None:
    with pytest.raises(ValueError, match="malformed manifest row"):
        manifest_entries([row])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "change",
    [
        {"evidence_id": "evidence-other"},
        {"source_id": "src-other"},
        {"version": 2},
        {"chunk_id": "chunk-other"},
        {"content_sha256": "0" * 64},
    ],
    ids=lambda change: next(iter(change)),
)
def test_any_change_to_what_a_ref_stands_for_changes_the_hash(change: dict[str, object]) -> None:
    evidence = three()
    base = freeze_manifest(context(*evidence)).sha256
    changed = [evidence[0], dataclasses.replace(evidence[1], **change), evidence[2]]  # type: ignore[arg-type]
    assert freeze_manifest(context(*changed)).sha256 != base


def test_order_and_membership_change_the_hash() -> None:
    a, b, c = three()
    base = freeze_manifest(context(a, b, c)).sha256
    assert freeze_manifest(context(b, a, c)).sha256 != base
    assert freeze_manifest(context(a, b)).sha256 != base
    assert freeze_manifest(context()).sha256 != base


def test_prompt_evidence_carries_refs_and_display_fields_but_no_identifiers() -> None:
    evidence = three()
    manifest = freeze_manifest(context(*evidence))
    prompt = prompt_evidence(manifest)

    names = {f.name for f in dataclasses.fields(PromptEvidence)}
    assert names.isdisjoint({"evidence_id", "chunk_id", "source_id", "content_sha256"})
    assert [p.ref for p in prompt] == ["E1", "E2", "E3"]
    for p, e in zip(prompt, evidence, strict=True):
        assert (p.passage, p.title, p.author, p.chapter, p.section, p.pages) == (
            e.passage,
            e.title,
            e.author,
            e.chapter,
            e.section,
            e.pages,
        )
        shown = repr(p)
        for hidden in (e.evidence_id, e.chunk_id, e.source_id, e.content_sha256):
            assert hidden not in shown


@pytest.mark.parametrize(
    ("labels", "physical", "expected"),
    [
        (("17", "18"), (47, 48), "17–18"),
        (("17", "17"), (47, 47), "17"),
        (("xii", "xiv"), (12, 14), "xii–xiv"),
        ((None, None), (47, 48), "47–48"),
        ((None, None), (None, None), ""),
    ],
)
def test_pages_are_printed_labels_when_the_book_has_them(
    labels: tuple[str | None, str | None],
    physical: tuple[int | None, int | None],
    expected: str,
) -> None:
    e = make_evidence(
        page_label_start=labels[0],
        page_label_end=labels[1],
        page_start=physical[0],
        page_end=physical[1],
    )
    assert e.pages == expected
