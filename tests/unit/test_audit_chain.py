"""The audit chain: any edited, removed or reordered record is detected and named.

Records are MACs under the audit key; a library made before keying holds an
unkeyed prefix, anchored by the first keyed record (``citadel.domain.audit``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from citadel.domain.answer import AnswerResult, Degraded, DegradedReason
from citadel.domain.audit import AuditRecord, answer_record
from citadel.domain.audit_chain import (
    GENESIS,
    AuditEntry,
    AuditHead,
    AuditKey,
    MalformedHead,
    UntrustedHead,
    chain_hash,
    format_head,
    keyed_head,
    next_link,
    parse_head,
    record_mac,
    sealed,
)
from citadel.domain.audit_verify import verify_chain
from citadel.domain.manifest import canonical_json
from citadel.domain.search import SearchResult
from citadel.domain.users import Actor

SECRET = b"k" * 32
KEY = AuditKey("test", SECRET)
NO_KEY = AuditKey("test")


def chain(texts: list[str], *, unkeyed: int = 0) -> list[AuditEntry]:
    """Records as the log writes them: each body names its answer (``a1``, ``a2``…);
    the first ``unkeyed`` made before the log was keyed."""
    entries: list[AuditEntry] = []
    last = GENESIS
    for seq, text in enumerate(texts, start=1):
        body = canonical_json({"answer_id": f"a{seq}", "text": text})
        digest = chain_hash(last, body) if seq <= unkeyed else record_mac(SECRET, last, body)
        entries.append(AuditEntry(seq, f"a{seq}", body, last, digest))
        last = digest
    return entries


def head(entries: list[AuditEntry], *, unkeyed: int = 0) -> AuditHead | None:
    if not entries:
        return None
    if unkeyed >= len(entries):
        return AuditHead(len(entries), entries[-1].hash)
    return keyed_head(SECRET, len(entries), entries[-1].hash, unkeyed + 1)


def test_an_intact_chain_verifies() -> None:
    entries = chain(["one", "two", "three"])
    report = verify_chain(entries, head(entries), KEY)
    assert report.intact and report.records == 3
    assert verify_chain([], None, KEY).intact is False
    assert verify_chain([], None, NO_KEY).intact


def test_an_edited_record_is_detected() -> None:
    entries = chain(["one", "two", "three"])
    entries[1] = dataclasses.replace(entries[1], body='{"verdict":"accepted"}')
    report = verify_chain(entries, head(chain(["one", "two", "three"])), KEY)
    assert not report.intact
    assert any("record 2" in p and "altered" in p for p in report.problems)


def test_a_removed_record_is_detected() -> None:
    entries = chain(["one", "two", "three"])
    original_head = head(entries)
    del entries[1]
    report = verify_chain(entries, original_head, KEY)
    assert not report.intact
    assert any("missing" in p for p in report.problems)


def test_removing_the_last_records_is_detected_by_the_head() -> None:
    entries = chain(["one", "two", "three"])
    report = verify_chain(entries[:2], head(entries), KEY)
    assert not report.intact
    assert any("head" in p for p in report.problems)


def test_a_rehashed_edit_still_breaks_the_next_link() -> None:
    entries = chain(["one", "two", "three"])
    forged = "TWO"
    entries[1] = dataclasses.replace(
        entries[1], body=forged, hash=record_mac(SECRET, entries[1].prev_hash, forged)
    )  # even rehashed with the key itself
    report = verify_chain(entries, head(chain(["one", "two", "three"])), KEY)
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
    report = verify_chain(entries, original_head, KEY)
    assert not report.intact, column


def test_a_record_filed_under_another_answer_id_is_detected_and_named() -> None:
    entries = chain(["one", "two", "three"])
    entries[1] = dataclasses.replace(entries[1], answer_id="forged")
    report = verify_chain(entries, head(entries), KEY)
    assert not report.intact
    [problem] = report.problems
    assert "record 2 (forged)" in problem and "a2" in problem


def test_a_body_that_names_no_answer_vouches_for_no_answer_id() -> None:
    for body in ["one", "[]", '{"answer_id": 3}', '{"text": "one"}', "[" * 100_000]:
        entries = [AuditEntry(1, "", body, GENESIS, record_mac(SECRET, GENESIS, body))]
        report = verify_chain(entries, head(entries), KEY)
        assert any("names no answer" in p for p in report.problems), body


def test_a_hostile_stored_value_is_quoted_escaped_in_problems() -> None:
    entries = chain(["one"])
    entries[0] = dataclasses.replace(entries[0], answer_id="\x1b[2J\u202e" + "x" * 500)
    [problem] = verify_chain(entries, head(entries), KEY).problems
    assert "\x1b" not in problem and "\u202e" not in problem and len(problem) < 250


def test_a_seq_out_of_order_is_detected() -> None:
    entries = chain(["one", "two", "three"])
    swapped = [entries[0], entries[2], entries[1]]
    assert not verify_chain(swapped, head(entries), KEY).intact
    entries[2] = dataclasses.replace(entries[2], seq=2)
    report = verify_chain(entries, head(entries), KEY)
    assert any("out of sequence" in p for p in report.problems)


def test_a_head_that_cannot_be_read_is_a_broken_chain() -> None:
    entries = chain(["one", "two"])
    report = verify_chain(entries, MalformedHead("the log's head is malformed"), KEY)
    assert not report.intact and report.records == 2
    assert any("head is malformed" in p for p in report.problems)


@pytest.mark.parametrize(
    ("count", "which"), [(3, "removed"), (1, "added outside"), (2, "hash of its last record")]
)
def test_a_head_that_disagrees_with_the_records_is_named(count: int, which: str) -> None:
    entries = chain(["one", "two"])
    digest = entries[-1].hash if count != 2 else entries[0].hash
    report = verify_chain(entries, keyed_head(SECRET, count, digest, 1), KEY)
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
        f"3:{HASH}:0:{HASH}",
        f"3:{HASH}:01:{HASH}",
        f"3:{HASH}:1:{HASH}:",
        f"3:{HASH}:1:{HASH.upper()}",
        f"3:{HASH}:1:{HASH[:-1]}",
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
    assert parse_head(f"12:{HASH}") == AuditHead(12, HASH)
    assert parse_head(f"0:{GENESIS}") == AuditHead(0, GENESIS)
    assert parse_head(f"12:{HASH}:3:{GENESIS}") == AuditHead(12, HASH, 3, GENESIS)
    keyed = keyed_head(SECRET, 2, HASH, 1)
    assert parse_head(format_head(keyed)) == keyed
    assert parse_head(format_head(AuditHead(2, HASH))) == AuditHead(2, HASH)


# What a writer of the database without the key can try (the review's reproductions).


@pytest.mark.parametrize("form", ["unkeyed", "old-mac", "made-up-mac", "other-key"])
def test_removing_the_last_record_and_rewriting_the_head_is_detected(form: str) -> None:
    entries = chain(["one", "two", "three"])
    before = head(entries)
    assert before is not None
    kept = entries[:2]
    forged_head = {
        "unkeyed": AuditHead(2, kept[-1].hash),
        "old-mac": AuditHead(2, kept[-1].hash, 1, before.mac),
        "made-up-mac": AuditHead(2, kept[-1].hash, 1, HASH),
        "other-key": keyed_head(b"x" * 32, 2, kept[-1].hash, 1),
    }[form]
    report = verify_chain(kept, forged_head, KEY)
    assert not report.intact and report.records == 2
    assert any("head" in p and "rewritten" in p for p in report.problems)


def test_removing_every_record_and_the_head_is_detected_while_the_key_exists() -> None:
    report = verify_chain([], None, KEY)
    assert not report.intact and report.records == 0
    assert any("records and head were removed" in p for p in report.problems)


@pytest.mark.parametrize("how", ["sha256", "other-key"])
def test_a_forged_record_appended_with_a_recomputed_hash_and_head_is_detected(how: str) -> None:
    entries = chain(["one", "two"])
    body = canonical_json({"answer_id": "a3", "text": "forged"})
    last = entries[-1].hash
    other = b"x" * 32
    digest = chain_hash(last, body) if how == "sha256" else record_mac(other, last, body)
    entries.append(AuditEntry(3, "a3", body, last, digest))
    for forged_head in (AuditHead(3, digest), keyed_head(other, 3, digest, 1)):
        report = verify_chain(entries, forged_head, KEY)
        assert not report.intact
        assert any("record 3 (a3) was altered" in p for p in report.problems)
        assert any("head" in p for p in report.problems)


def test_without_the_key_verify_says_so_and_still_checks_links() -> None:
    entries = chain(["one", "two", "three"])
    report = verify_chain(entries, head(entries), NO_KEY)
    assert not report.intact
    assert report.problems == (
        "the audit key is missing (test): records 1–3 are keyed and cannot be verified"
        " without it; restore the key from a backup",
    )
    del entries[1]
    report = verify_chain(entries, head(chain(["one", "two", "three"])), NO_KEY)
    assert any("missing" in p and "records 2–2" in p for p in report.problems)


def test_a_key_that_cannot_be_used_is_named() -> None:
    entries = chain(["one"])
    report = verify_chain(entries, head(entries), AuditKey("k", trouble="it holds 3 bytes"))
    assert not report.intact
    assert any("cannot be used (it holds 3 bytes)" in p for p in report.problems)


def test_an_unkeyed_log_without_a_key_is_reported_as_unkeyed_not_intact() -> None:
    entries = chain(["one", "two"], unkeyed=2)
    report = verify_chain(entries, head(entries, unkeyed=2), NO_KEY)
    assert not report.intact and report.unkeyed == 2 and report.keyed_from == 0
    [problem] = report.problems
    assert "not keyed" in problem and "next answer recorded keys it" in problem
    # An unkeyed head where the key exists is a rewritten one.
    report = verify_chain(entries, head(entries, unkeyed=2), KEY)
    assert any("head is unkeyed, but the audit key exists" in p for p in report.problems)


def test_a_library_keyed_after_its_first_records_verifies_them_as_unkeyed() -> None:
    entries = chain(["one", "two", "three", "four"], unkeyed=2)
    report = verify_chain(entries, head(entries, unkeyed=2), KEY)
    assert report.intact and report.records == 4
    assert (report.keyed_from, report.unkeyed) == (3, 2)


def test_the_first_keyed_record_anchors_the_unkeyed_ones() -> None:
    entries = chain(["one", "two", "three"], unkeyed=2)
    original = head(entries, unkeyed=2)
    # Rewrite record 1 and rehash the unkeyed part consistently: record 3's MAC
    # vouches for the link to record 2's old hash, so the rewrite shows.
    body = canonical_json({"answer_id": "a1", "text": "forged"})
    first = dataclasses.replace(entries[0], body=body, hash=chain_hash(GENESIS, body))
    second = dataclasses.replace(
        entries[1], prev_hash=first.hash, hash=chain_hash(first.hash, entries[1].body)
    )
    third = dataclasses.replace(entries[2], prev_hash=second.hash)
    report = verify_chain([first, second, third], original, KEY)
    assert any("record 3 (a3) was altered" in p for p in report.problems)


def test_moving_where_keying_began_needs_the_key() -> None:
    entries = chain(["one", "two", "three"], unkeyed=1)
    honest = head(entries, unkeyed=1)
    assert honest is not None and verify_chain(entries, honest, KEY).intact
    moved = dataclasses.replace(honest, keyed_from=3)  # claim record 2 was unkeyed
    report = verify_chain(entries, moved, KEY)
    assert any("does not carry the audit key's MAC" in p for p in report.problems)


def test_appending_needs_a_head_the_key_vouches_for() -> None:
    entries = chain(["one", "two"])
    vouched = head(entries)
    assert vouched is not None
    assert next_link(vouched, SECRET, key_is_new=False).seq == 3
    for untrusted in (
        None,
        AuditHead(2, entries[-1].hash),
        dataclasses.replace(vouched, count=1),
        keyed_head(b"x" * 32, 2, entries[-1].hash, 1),
    ):
        with pytest.raises(UntrustedHead):
            next_link(untrusted, SECRET, key_is_new=False)
    with pytest.raises(UntrustedHead, match="key is missing"):
        next_link(vouched, SECRET, key_is_new=True)


def test_the_first_keyed_append_anchors_the_unkeyed_chain() -> None:
    entries = chain(["one", "two"], unkeyed=2)
    link = next_link(AuditHead(2, entries[-1].hash), SECRET, key_is_new=True)
    assert (link.seq, link.prev_hash, link.keyed_from) == (3, entries[-1].hash, 3)
    body = canonical_json({"answer_id": "a3"})
    entry, after = sealed(link, SECRET, "a3", body)
    report = verify_chain([*entries, entry], after, KEY)
    assert report.intact and (report.keyed_from, report.unkeyed) == (3, 2)
    assert next_link(None, SECRET, key_is_new=True) == type(link)(1, GENESIS, 1)


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
