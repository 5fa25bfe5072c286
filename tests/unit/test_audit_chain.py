"""The audit chain: any edited, removed or reordered record is detected and named."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from citadel.domain.answer import AnswerResult, Degraded, DegradedReason
from citadel.domain.audit import (
    GENESIS,
    AuditEntry,
    AuditRecord,
    MalformedHead,
    answer_record,
    chain_hash,
    parse_head,
    verify_chain,
)
from citadel.domain.manifest import canonical_json
from citadel.domain.search import SearchResult
from citadel.domain.users import Actor


def chain(texts: list[str]) -> list[AuditEntry]:
    """Records as the log writes them: each body names its answer (``a1``, ``a2``…)."""
    entries: list[AuditEntry] = []
    last = GENESIS
    for seq, text in enumerate(texts, start=1):
        body = canonical_json({"answer_id": f"a{seq}", "text": text})
        digest = chain_hash(last, body)
        entries.append(AuditEntry(seq, f"a{seq}", body, last, digest))
        last = digest
    return entries


def head(entries: list[AuditEntry]) -> tuple[int, str]:
    return len(entries), entries[-1].hash if entries else GENESIS


def test_an_intact_chain_verifies() -> None:
    entries = chain(["one", "two", "three"])
    report = verify_chain(entries, head(entries))
    assert report.intact and report.records == 3
    assert verify_chain([], (0, GENESIS)).intact


def test_an_edited_record_is_detected() -> None:
    entries = chain(["one", "two", "three"])
    entries[1] = dataclasses.replace(entries[1], body='{"verdict":"accepted"}')
    report = verify_chain(entries, head(chain(["one", "two", "three"])))
    assert not report.intact
    assert any("record 2" in p and "altered" in p for p in report.problems)


def test_a_removed_record_is_detected() -> None:
    entries = chain(["one", "two", "three"])
    original_head = head(entries)
    del entries[1]
    report = verify_chain(entries, original_head)
    assert not report.intact
    assert any("missing" in p for p in report.problems)


def test_removing_the_last_records_is_detected_by_the_head() -> None:
    entries = chain(["one", "two", "three"])
    report = verify_chain(entries[:2], head(entries))
    assert not report.intact
    assert any("head" in p for p in report.problems)


def test_a_rehashed_edit_still_breaks_the_next_link() -> None:
    entries = chain(["one", "two", "three"])
    forged = "TWO"
    entries[1] = dataclasses.replace(
        entries[1], body=forged, hash=chain_hash(entries[1].prev_hash, forged)
    )
    report = verify_chain(entries, head(chain(["one", "two", "three"])))
    assert any("record 3 does not follow" in p for p in report.problems)


def forged(value: Any) -> Any:
    """Another value of the same type, as a tamperer with write access would store."""
    return value + 7 if isinstance(value, int) else "forged"


COLUMNS = [f.name for f in dataclasses.fields(AuditEntry)]


@pytest.mark.parametrize("position", [0, 1, 2])
@pytest.mark.parametrize("column", COLUMNS)
def test_a_change_to_any_stored_column_of_any_record_is_detected(
    column: str, position: int
) -> None:
    # Every field of AuditEntry is a stored column: a new one is covered here unasked.
    entries = chain(["one", "two", "three"])
    original_head = head(entries)
    entries[position] = dataclasses.replace(
        entries[position], **{column: forged(getattr(entries[position], column))}
    )
    report = verify_chain(entries, original_head)
    assert not report.intact, column


def test_a_record_filed_under_another_answer_id_is_detected_and_named() -> None:
    entries = chain(["one", "two", "three"])
    entries[1] = dataclasses.replace(entries[1], answer_id="forged")
    report = verify_chain(entries, head(entries))
    assert not report.intact
    [problem] = report.problems
    assert "record 2 (forged)" in problem and "a2" in problem


def test_a_body_that_names_no_answer_vouches_for_no_answer_id() -> None:
    for body in ["one", "[]", '{"answer_id": 3}', '{"text": "one"}', "[" * 100_000]:
        entries = [AuditEntry(1, "", body, GENESIS, chain_hash(GENESIS, body))]
        report = verify_chain(entries, head(entries))
        assert any("names no answer" in p for p in report.problems), body


def test_a_hostile_stored_value_is_quoted_escaped_in_problems() -> None:
    entries = chain(["one"])
    entries[0] = dataclasses.replace(entries[0], answer_id="\x1b[2J\u202e" + "x" * 500)
    [problem] = verify_chain(entries, head(entries)).problems
    assert "\x1b" not in problem and "\u202e" not in problem and len(problem) < 250


def test_a_seq_out_of_order_is_detected() -> None:
    entries = chain(["one", "two", "three"])
    swapped = [entries[0], entries[2], entries[1]]
    assert not verify_chain(swapped, head(entries)).intact
    entries[2] = dataclasses.replace(entries[2], seq=2)
    report = verify_chain(entries, head(entries))
    assert any("out of sequence" in p for p in report.problems)


def test_a_head_that_cannot_be_read_is_a_broken_chain() -> None:
    entries = chain(["one", "two"])
    report = verify_chain(entries, MalformedHead("the log's head is malformed"))
    assert not report.intact and report.records == 2
    assert any("head is malformed" in p for p in report.problems)


@pytest.mark.parametrize(
    ("count", "which"), [(3, "removed"), (1, "added outside"), (2, "hash of its last record")]
)
def test_a_head_that_disagrees_with_the_records_is_named(count: int, which: str) -> None:
    entries = chain(["one", "two"])
    digest = entries[-1].hash if count != 2 else entries[0].hash
    report = verify_chain(entries, (count, digest))
    assert not report.intact
    assert any("head" in p and which in p for p in report.problems)


HASH = "ab" * 32


@pytest.mark.parametrize(
    "value",
    [
        "x",
        "",
        "3",
        "3:",
        f":{HASH}",
        f"-1:{HASH}",
        f"+1:{HASH}",
        f"03:{HASH}",
        f" 3:{HASH}",
        f"3:{HASH} ",
        f"3:{HASH}\n",
        f"3:{HASH}:3",
        f"3:{HASH.upper()}",
        f"3:{HASH[:-1]}",
        f"3.0:{HASH}",
        f"1e3:{HASH}",
        f"٣:{HASH}",  # an Arabic-Indic digit: int() would take it
        f"{'9' * 40}:{HASH}",
        None,
        5,
        b"3:" + HASH.encode(),
    ],
)
def test_a_malformed_head_value_is_refused(value: object) -> None:
    with pytest.raises(MalformedHead):
        parse_head(value)


def test_a_well_formed_head_is_read() -> None:
    assert parse_head(f"12:{HASH}") == (12, HASH)
    assert parse_head(f"0:{GENESIS}") == (0, GENESIS)


def test_the_record_of_an_answer_without_evidence_holds_its_reason_and_no_manifest() -> None:
    result = AnswerResult(
        answer_id="a1",
        request_id="r1",
        search=SearchResult(query="q"),
        answer=None,
        degraded=Degraded(DegradedReason.NO_EVIDENCE, "no passage met the criteria"),
    )
    record = answer_record(result, Actor(user_id="ann", tenant="acme"), "2026-01-01T00:00:00Z")
    assert (record.answer_id, record.request_id, record.user_id, record.tenant) == (
        "a1",
        "r1",
        "ann",
        "acme",
    )
    assert (record.verdict, record.reason) == ("degraded", "no_evidence")
    assert record.manifest == () and record.manifest_sha256 == "" and record.citations == ()
    assert record.generator == "" and record.output == ""
    assert AuditRecord.from_json(record.to_json()) == record
