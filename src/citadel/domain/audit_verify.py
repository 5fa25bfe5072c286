"""Verifying the audit chain: every stored column against what the chain and its
keyed head vouch for (``citadel.domain.audit_chain``), with problems a reader can act on."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, fields

from citadel.domain.audit_chain import (
    GENESIS,
    AuditEntry,
    AuditHead,
    AuditKey,
    MalformedHead,
    body_answer_id,
    expected_entry,
    head_vouched,
    record_mac,
)


@dataclass(frozen=True, slots=True)
class ChainReport:
    records: int
    problems: tuple[str, ...]
    keyed_from: int = 0
    """The first keyed record's number; 0 when the log holds no keyed record."""
    unkeyed: int = 0
    """Records made before the log was keyed, verified as the unkeyed chain they are
    (vouched for by the first keyed record's MAC over the link to the last of them)."""

    @property
    def intact(self) -> bool:
        return not self.problems


def verify_chain(
    entries: Iterable[AuditEntry],
    head: AuditHead | MalformedHead | None,
    key: AuditKey,
) -> ChainReport:
    """Every column of every record against what the chain vouches for, then the head;
    each problem named.

    ``head`` is the stored head, why it could not be read, or ``None`` when none is
    stored; ``key`` the audit key as its keeper holds it. Records before the head's
    ``keyed_from`` are checked as the unkeyed chain, the rest by their MACs. When
    the head cannot be trusted to say where keying began, the first record whose
    hash is its MAC is taken as the first keyed one (for naming problems only: the
    head's own problem already breaks the chain). Without the key the keyed
    records' links and numbers are still checked, and the missing key is a problem.
    """
    secret = key.secret
    stored = head if isinstance(head, AuditHead) else None
    infer = secret is not None and (stored is None or not head_vouched(secret, stored))
    keyed_from = stored.keyed_from if stored is not None and not infer else 0
    problems: list[str] = []
    previous: AuditEntry | None = None
    count = 0
    for entry in entries:
        count += 1
        if (
            infer
            and secret is not None
            and not keyed_from
            and entry.hash == record_mac(secret, entry.prev_hash, entry.body)
        ):
            keyed_from = count
        keyed = bool(keyed_from) and count >= keyed_from
        expected = expected_entry(previous, entry, secret if keyed else None)
        if keyed and secret is None:
            expected = _unverifiable(expected, entry)
        for column in fields(AuditEntry):
            wrong = getattr(entry, column.name) != getattr(expected, column.name)
            if column.name == "answer_id" and body_answer_id(entry.body) is None:
                wrong = True  # a body that names no answer vouches for no answer_id
            if wrong:
                problems.append(_difference(column.name, entry, expected))
        previous = entry
    last = previous.hash if previous else GENESIS
    problems.extend(_key_problems(key, stored, count))
    problems.extend(_head_problems(head, key, count, last))
    unkeyed = min(keyed_from - 1, count) if keyed_from else count
    return ChainReport(count, tuple(problems), keyed_from, unkeyed)


def _difference(column: str, entry: AuditEntry, expected: AuditEntry) -> str:
    """The problem of one stored column that is not what the chain vouches for."""
    named = f"record {entry.seq} ({_shown(entry.answer_id)})"
    if column == "seq":
        if entry.seq > expected.seq:
            return f"records {expected.seq}–{entry.seq - 1} are missing"
        return f"{named} is out of sequence: record {expected.seq} was expected here"
    if column == "answer_id":
        said = body_answer_id(entry.body)
        if said is None:
            return f"{named} has a body that names no answer: the record was altered"
        return (
            f"{named} is filed under another answer id than its body's, {_shown(said)}:"
            " the record was altered"
        )
    if column == "prev_hash":
        return f"record {entry.seq} does not follow the record before it"
    return f"{named} was altered"


def _unverifiable(expected: AuditEntry, entry: AuditEntry) -> AuditEntry:
    """Without the key a keyed record's MAC cannot be checked: take it as stored (the
    missing key is reported once, and breaks the chain)."""
    return AuditEntry(
        expected.seq, expected.answer_id, expected.body, expected.prev_hash, entry.hash
    )


def _key_problems(key: AuditKey, head: AuditHead | None, count: int) -> list[str]:
    if key.secret is not None:
        return []
    if key.trouble:
        return [f"the audit key {key.where} cannot be used ({key.trouble}): the log is unverified"]
    if head is not None and head.keyed:
        return [
            f"the audit key is missing ({key.where}): records {head.keyed_from}–{head.count}"
            " are keyed and cannot be verified without it; restore the key from a backup"
        ]
    if count or head is not None:
        return [
            f"the log is not keyed (no audit key at {key.where}): nothing vouches for its"
            f" {count} records against anyone able to write the database. If it was keyed,"
            " the key was removed and the head rewritten; if it predates keying, the next"
            " answer recorded keys it and anchors these records"
        ]
    return []  # no key, no head, no record: a log nothing was ever recorded in


def _head_problems(
    head: AuditHead | MalformedHead | None, key: AuditKey, count: int, last: str
) -> list[str]:
    if isinstance(head, MalformedHead):
        return [f"{head}: the end of the log cannot be checked"]
    secret = key.secret
    if head is None:
        if count:
            return ["the log has records but no head: its head was removed"]
        if secret is not None:
            return [
                f"the audit key exists ({key.where}), so this log was keyed, but it holds"
                " no record and no head: its records and head were removed"
            ]
        return []
    problems: list[str] = []
    if secret is not None:
        if not head.keyed:
            problems.append(
                "the log's head is unkeyed, but the audit key exists: the head was rewritten"
            )
        elif not head_vouched(secret, head):
            problems.append(
                "the log's head does not carry the audit key's MAC: the head was rewritten"
                " (records were removed or added outside the log)"
            )
    if head.count > count:
        problems.append(
            f"the log's head records {head.count} records but the log holds {count}:"
            " records were removed, or the head was rewritten"
        )
    elif head.count < count:
        problems.append(
            f"the log holds {count} records but its head records {head.count}:"
            " records were added outside the log, or the head was rewritten"
        )
    elif head.hash != (last if count else GENESIS):
        problems.append(
            f"the log's head does not hold the hash of its last record ({count}):"
            " the last record was replaced, or the head was rewritten"
        )
    return problems


_PLAIN = re.compile(r"[A-Za-z0-9_.:-]{1,80}")


def _shown(value: str) -> str:
    """A stored value as a problem may quote it: plain ids as they are, anything
    else escaped (no control or bidi characters reach a terminal) and shortened."""
    if _PLAIN.fullmatch(value):
        return value
    text = ascii(value)
    return text if len(text) <= 80 else text[:77] + "..."
