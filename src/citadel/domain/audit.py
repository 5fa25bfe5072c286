"""The audit record of one answer, and the keyed chain that makes the log tamper-evident.

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

What a record never holds: secrets, API tokens, signed viewer links (links
are resolved for each reader at display time) and passage text (the manifest
pins each passage by its content hash).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from citadel.domain.answer import AnswerResult, LinkState
from citadel.domain.manifest import canonical_json, manifest_rows
from citadel.domain.users import Actor

GENESIS = "0" * 64


@dataclass(frozen=True, slots=True)
class CitationAudit:
    """How one citation resolved for the asking reader when the answer was shown."""

    segment: int
    ref: str
    state: str
    authorized: bool


@dataclass(frozen=True, slots=True)
class AuditRecord:
    answer_id: str
    request_id: str
    time: str
    user_id: str
    tenant: str
    manifest_sha256: str
    manifest: tuple[dict[str, object], ...]
    """ref → source, version, chunk and content sha256, in ref order."""
    generator: str
    model: str
    prompt_version: str
    prompt_sha256: str
    raw_sha256: str
    output: str
    """The last candidate's decoded payload as canonical JSON ("" when none came back):
    what `audit replay` re-validates."""
    verdict: str
    """``accepted`` or ``degraded``."""
    reason: str
    detail: str
    citations: tuple[CitationAudit, ...] = field(default=())

    def to_json(self) -> str:
        return canonical_json(
            {
                "answer_id": self.answer_id,
                "request_id": self.request_id,
                "time": self.time,
                "actor": {"user_id": self.user_id, "tenant": self.tenant},
                "manifest": {"sha256": self.manifest_sha256, "entries": list(self.manifest)},
                "generation": {
                    "generator": self.generator,
                    "model": self.model,
                    "prompt_version": self.prompt_version,
                    "prompt_sha256": self.prompt_sha256,
                    "raw_sha256": self.raw_sha256,
                    "output": self.output,
                },
                "verdict": {"outcome": self.verdict, "reason": self.reason, "detail": self.detail},
                "citations": [
                    {
                        "segment": c.segment,
                        "ref": c.ref,
                        "state": c.state,
                        "authorized": c.authorized,
                    }
                    for c in self.citations
                ],
            }
        )

    @classmethod
    def from_json(cls, body: str) -> AuditRecord:
        data = json.loads(body)
        generation, verdict = data["generation"], data["verdict"]
        return cls(
            answer_id=data["answer_id"],
            request_id=data["request_id"],
            time=data["time"],
            user_id=data["actor"]["user_id"],
            tenant=data["actor"]["tenant"],
            manifest_sha256=data["manifest"]["sha256"],
            manifest=tuple(data["manifest"]["entries"]),
            generator=generation["generator"],
            model=generation["model"],
            prompt_version=generation["prompt_version"],
            prompt_sha256=generation["prompt_sha256"],
            raw_sha256=generation["raw_sha256"],
            output=generation["output"],
            verdict=verdict["outcome"],
            reason=verdict["reason"],
            detail=verdict["detail"],
            citations=tuple(
                CitationAudit(c["segment"], c["ref"], c["state"], c["authorized"])
                for c in data["citations"]
            ),
        )


def answer_record(result: AnswerResult, actor: Actor, time: str) -> AuditRecord:
    """The record of ``result`` as shown to ``actor`` at ``time``: its citations as they
    resolved for that reader (resolve before recording), the manifest in its canonical
    rows, the generation and the verdict."""
    generation = result.generation
    manifest = result.manifest
    return AuditRecord(
        answer_id=result.answer_id,
        request_id=result.request_id,
        time=time,
        user_id=actor.user_id,
        tenant=actor.tenant,
        manifest_sha256=manifest.sha256 if manifest else "",
        manifest=manifest_rows(manifest.entries) if manifest else (),
        generator=generation.generator if generation else "",
        model=generation.model if generation else "",
        prompt_version=generation.prompt_version if generation else "",
        prompt_sha256=generation.prompt_sha256 if generation else "",
        raw_sha256=generation.raw_sha256 if generation else "",
        output=generation.output if generation else "",
        verdict="accepted" if result.answer is not None else "degraded",
        reason=result.degraded.reason.value if result.degraded else "",
        detail=result.degraded.detail if result.degraded else "",
        citations=tuple(
            CitationAudit(
                segment=index,
                ref=citation.ref,
                state=citation.link_state.value,
                authorized=citation.link_state is not LinkState.FORBIDDEN,
            )
            for index, segment in enumerate(result.answer.segments if result.answer else ())
            for citation in segment.citations
        ),
    )


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
