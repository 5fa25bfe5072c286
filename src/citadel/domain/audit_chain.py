"""The keyed chain that makes the audit log tamper-evident.

Each record is stored as canonical JSON. Its hash is a MAC made with the
audit key, a secret kept outside the database (``audit.key`` in
CITADEL_HOME, 32 random bytes, 0600, created by the first append):
``HMAC-SHA256(key, "citadel audit record" || previous hash || body)``
(``record_mac``), starting from ``GENESIS``. The log's head (record count,
last hash, and ``keyed_from``: the first keyed record's number) carries a MAC
of its own, made with a different prefix (``head_mac``): a record's hash,
which anyone can read, never passes for the head's. Every stored column is
vouched for, and verification checks each one (``expected_entry``): the
body and link by the record's MAC, the answer id by the body (which names
it), the sequence number by the record before, the hash by the next link and
the head.

Threat model. The attacker can read and write the database file (drop its
triggers, edit, delete and insert rows, rewrite ``meta``) but can neither
read nor write the key file. Such an attacker cannot edit a record, forge
one, insert one, reorder them or remove any (the first, one in the middle,
the last ones, or all of them) without ``audit verify`` saying so: every
record's hash and the head need the key, a rewritten head fails its MAC,
and a log without a head while the key exists is one whose records and head
were removed (the key is only ever created by an append, so its existence
says the log was keyed). Appending after a head the key does not vouch for
is refused, so the next answer cannot launder a truncation. What the
attacker can still do: destroy the database (verify then reports the loss);
and put back a whole earlier state of the log they copied (its records and
its then valid head), which drops the records made since and is not
detectable from the database and the key alone; against that, copy the
stored head (``audit_head`` in ``meta``) from time to time somewhere the
attacker cannot write, and compare. Whoever can read the key can forge anything: guard it like
``viewer.key``, and back it up with the database (without it, the keyed
records can no longer be verified, and ``audit verify`` says so).

Migration. A library made before the log was keyed holds unkeyed records:
``hash = sha256(previous hash || "\\n" || body)`` (``chain_hash``) and a head
``count:hash``. Until its first keyed append, verify checks that chain and
reports the log as unkeyed (not intact: nothing vouches for it against a
writer of the database). The first append creates the key and writes record
N+1 keyed, its MAC covering the link to record N's hash, with the head
``keyed_from = N+1``: from then on records 1..N are verified as the unkeyed
chain they are (``ChainReport.unkeyed`` counts them), and rewriting any of
them breaks the link the first keyed record's MAC vouches for. Tampering
done before that first keyed append cannot be detected. A first keyed append
that fails removes the key it made; one killed between making the key and
committing leaves a key beside an unkeyed head, which reads (and is refused)
as a rewritten head: it cannot be told from one. Removing that fresh key lets
the next answer key the log.

One keyed log per CITADEL_HOME: the key belongs to the library there. Split
mode's services (``serve-grpc``) and the HTTP edge share CITADEL_HOME, so
they share the key. A new library in a home whose key keyed an old one
looks like a removed log: remove ``audit.key`` with the old database.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass, field

GENESIS = "0" * 64


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One stored record and its place in the chain.

    Every field is a stored column, and every one is vouched for by the chain
    (see ``expected_entry``): ``body`` and ``prev_hash`` by ``hash`` (the
    record's MAC; ``chain_hash`` for a record made before the log was keyed);
    ``answer_id`` by the body, which names its answer; ``seq`` by the record's
    position in the chain; ``hash`` by the next record's link and the head.
    """

    seq: int
    answer_id: str
    body: str
    prev_hash: str
    hash: str


KEY_BYTES = 32
"""The audit key's length: 32 random bytes."""

_RECORD = b"citadel audit record\n"
_HEAD_MAC = b"citadel audit head\n"


@dataclass(frozen=True, slots=True)
class AuditKey:
    """The audit key as its keeper holds it now: ``secret`` is ``None`` when there is no
    key (none was ever made: the log was never keyed; or its file was removed), and
    ``trouble`` says why a key that exists cannot be used."""

    where: str
    """Where the key is kept, as problems name it (a path, or ``memory``)."""
    secret: bytes | None = field(default=None, repr=False)
    trouble: str = ""


def chain_hash(prev_hash: str, body: str) -> str:
    """The unkeyed hash of a record made before the log was keyed."""
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()


def record_mac(key: bytes, prev_hash: str, body: str) -> str:
    """A keyed record's hash: HMAC-SHA256 of the link and the body under the audit key."""
    message = _RECORD + f"{prev_hash}\n{body}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class AuditHead:
    """The log's stored head: how many records it holds and the last one's hash.

    ``keyed_from`` is the number of the first keyed record (records before it were
    made before the log was keyed), and ``mac`` the head's own MAC over all three
    (``head_mac``); both are ``0`` and ``""`` in an unkeyed head (``count:hash``).
    """

    count: int
    hash: str
    keyed_from: int = 0
    mac: str = ""

    @property
    def keyed(self) -> bool:
        return self.keyed_from > 0


def head_mac(key: bytes, count: int, last_hash: str, keyed_from: int) -> str:
    message = _HEAD_MAC + f"{count}\n{last_hash}\n{keyed_from}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def keyed_head(key: bytes, count: int, last_hash: str, keyed_from: int) -> AuditHead:
    return AuditHead(count, last_hash, keyed_from, head_mac(key, count, last_hash, keyed_from))


def head_vouched(key: bytes, head: AuditHead) -> bool:
    """Whether ``head`` is keyed and its MAC is the one ``key`` makes."""
    if not head.keyed:
        return False
    expected = head_mac(key, head.count, head.hash, head.keyed_from)
    return hmac.compare_digest(head.mac, expected)


def body_answer_id(body: object) -> str | None:
    """The answer a stored body says it records; ``None`` when it names none."""
    if not isinstance(body, str):
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return None
    answer_id = data.get("answer_id") if isinstance(data, dict) else None
    return answer_id if isinstance(answer_id, str) else None


def expected_entry(
    previous: AuditEntry | None, stored: AuditEntry, key: bytes | None = None
) -> AuditEntry:
    """What the record after ``previous`` (``None``: the first) must hold in every
    column, given the body stored there.

    The body is the one value taken from storage, and the hash is what vouches
    for it: ``record_mac`` under ``key`` for a keyed record, ``chain_hash`` when
    ``key`` is ``None`` (a record made before the log was keyed). Every other
    column is derived from the chain: the sequence number follows the record
    before, the link is that record's hash, the answer id is the one the body
    names. ``verify_chain`` compares every field of the stored entry with this
    one, so a column added to ``AuditEntry`` has to be derived here too.
    """
    digest = (
        record_mac(key, stored.prev_hash, stored.body)
        if key is not None
        else chain_hash(stored.prev_hash, stored.body)
    )
    return AuditEntry(
        seq=previous.seq + 1 if previous else 1,
        answer_id=body_answer_id(stored.body) or "",
        body=stored.body,
        prev_hash=previous.hash if previous else GENESIS,
        hash=digest,
    )


class MalformedHead(ValueError):
    """The log's stored head cannot be read, or cannot be appended after."""


class UntrustedHead(MalformedHead):
    """The head reads, but the audit key does not vouch for it: appending after it
    would make a removal look intact, so the append is refused."""


@dataclass(frozen=True, slots=True)
class Link:
    """Where the next record goes: its number, the hash it links to, and the log's
    ``keyed_from`` once it is written."""

    seq: int
    prev_hash: str
    keyed_from: int


def next_link(head: AuditHead | None, key: bytes, *, key_is_new: bool) -> Link:
    """Where the record appended after ``head`` (``None``: none is stored) goes.

    ``key_is_new``: the key was made for this append (the log was never keyed, so
    the head is unkeyed or absent and this record is the first keyed one, anchoring
    the records before it). With a key that already existed the head must be one it
    vouches for; anything else is refused (``UntrustedHead``), because chaining
    after it would seal a rewritten head with a valid MAC.
    """
    if key_is_new:
        if head is None:
            return Link(1, GENESIS, 1)
        if head.keyed:
            raise UntrustedHead("the log is keyed, but its audit key is missing")
        return Link(head.count + 1, head.hash, head.count + 1)
    if head is None:
        raise UntrustedHead(
            "the audit key exists, so this log was keyed, but it has no head:"
            " its records and head were removed"
        )
    if not head.keyed:
        raise UntrustedHead(
            "the log's head is unkeyed, but the audit key exists: the head was rewritten"
        )
    if not head_vouched(key, head):
        raise UntrustedHead(
            "the log's head does not carry the audit key's MAC: the head was rewritten"
        )
    return Link(head.count + 1, head.hash, head.keyed_from)


def sealed(link: Link, key: bytes, answer_id: str, body: str) -> tuple[AuditEntry, AuditHead]:
    """The record at ``link`` and the head after it, both keyed."""
    digest = record_mac(key, link.prev_hash, body)
    entry = AuditEntry(link.seq, answer_id, body, link.prev_hash, digest)
    return entry, keyed_head(key, link.seq, digest, link.keyed_from)


_N = r"(?:0|[1-9][0-9]{0,17})"
_HEX = r"[0-9a-f]{64}"
_HEAD = re.compile(rf"({_N}):({_HEX})(?::([1-9][0-9]{{0,17}}):({_HEX}))?")


def format_head(head: AuditHead) -> str:
    """``count:hash``, unkeyed; ``count:hash:keyed_from:mac``, keyed."""
    if not head.keyed:
        return f"{head.count}:{head.hash}"
    return f"{head.count}:{head.hash}:{head.keyed_from}:{head.mac}"


def parse_head(value: object) -> AuditHead:
    """A stored head back as an ``AuditHead``; ``MalformedHead`` otherwise."""
    if not isinstance(value, str):
        raise MalformedHead(f"the log's head is stored as {type(value).__name__}, not text")
    match = _HEAD.fullmatch(value)
    if match is None:
        raise MalformedHead(
            "the log's head is malformed (it must be the record count, ':' and a sha256,"
            " then ':', the first keyed record and the head's MAC)"
        )
    if match[3] is None:
        return AuditHead(int(match[1]), match[2])
    return AuditHead(int(match[1]), match[2], int(match[3]), match[4])
