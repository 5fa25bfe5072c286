"""The audit chain: any edited, removed or reordered record is detected and named."""

from __future__ import annotations

import dataclasses

from citadel.domain.audit import GENESIS, AuditEntry, chain_hash, verify_chain


def chain(bodies: list[str]) -> list[AuditEntry]:
    entries: list[AuditEntry] = []
    last = GENESIS
    for seq, body in enumerate(bodies, start=1):
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
