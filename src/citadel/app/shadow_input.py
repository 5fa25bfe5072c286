"""The records shadow mode reads: another assistant's answers, one JSON object per line.

A record is ``{"id"?, "question", "answer", "citations", "timestamp", "user"?}``. A
citation is a string (a URL when it starts with a scheme, a path when it starts
with ``/``, else a document id, optionally ``ID@VERSION``) or an object with
``url``, ``path`` and ``doc_id`` (at least one of them) and an optional
``version``. An object with a ``url`` (or ``path``) *and* a ``doc_id`` says which
document the other system meant (its retrieval's id) and which link it rendered:
the link is what is checked, the id is what it should lead to.

Parsing is strict: a record that is not what this says is refused with its line
number, so a report never rests on a half-read file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from citadel.app.errors import InvalidRequest
from citadel.domain.errors import InvalidValue
from citadel.domain.integers import MAX_VERSION, check_int, parse_int
from citadel.domain.json_input import loads_strict

MAX_LINE_BYTES = 1 << 20
"""A line longer than this (1 MiB) is refused: no answer record needs it."""
MAX_CITATIONS = 1000
MAX_TEXT_CHARS = 200_000
MAX_CITATION_CHARS = 4096

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_VERSIONED_ID = re.compile(r"(?P<id>[^@]+)@(?P<version>[0-9]+)")
_KNOWN = {"id", "question", "answer", "citations", "timestamp", "user"}
_CITATION_KEYS = {"url", "path", "doc_id", "version"}


@dataclass(frozen=True, slots=True)
class CitedRef:
    """One citation as the other system gave it."""

    text: str
    """What the record said, for the report (a URL, a path, an id, or their join)."""
    url: str | None = None
    path: str | None = None
    doc_id: str | None = None
    version: int | None = None


@dataclass(frozen=True, slots=True)
class ShadowRecord:
    line: int
    record_id: str
    question: str
    answer: str
    citations: tuple[CitedRef, ...]
    timestamp: datetime
    """When the answer was shown (timezone-aware)."""
    user: str | None = None
    """Who it was shown to; None: the reader the report runs as."""


class BadRecord(InvalidRequest):
    """A line that is not a shadow record; says which line and why."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def parse_record(line: int, raw: bytes) -> ShadowRecord:
    """The record on ``raw`` (line ``line``, 1-based, without its newline); ``BadRecord``."""
    if len(raw) > MAX_LINE_BYTES:
        raise BadRecord(line, f"longer than {MAX_LINE_BYTES} bytes")
    try:
        value = loads_strict(raw)
    except InvalidValue as exc:
        raise BadRecord(line, str(exc)) from None
    if not isinstance(value, dict):
        raise BadRecord(line, "not a JSON object")
    unknown = sorted(set(value) - _KNOWN)
    if unknown:
        raise BadRecord(line, f"unknown field {unknown[0]!r}")
    for name in ("question", "answer", "citations", "timestamp"):
        if name not in value:
            raise BadRecord(line, f"missing field {name!r}")
    question = _text(line, value, "question")
    answer = _text(line, value, "answer")
    record_id = str(value["id"]) if "id" in value else f"line-{line}"
    if "id" in value and not isinstance(value["id"], str | int):
        raise BadRecord(line, "'id' must be a string or a number")
    user = value.get("user")
    if user is not None and (not isinstance(user, str) or not user.strip()):
        raise BadRecord(line, "'user' must be a non-empty string")
    citations = value["citations"]
    if not isinstance(citations, list):
        raise BadRecord(line, "'citations' must be a list")
    if len(citations) > MAX_CITATIONS:
        raise BadRecord(line, f"more than {MAX_CITATIONS} citations")
    return ShadowRecord(
        line=line,
        record_id=record_id,
        question=question,
        answer=answer,
        citations=tuple(_citation(line, i, c) for i, c in enumerate(citations, 1)),
        timestamp=_timestamp(line, value["timestamp"]),
        user=user,
    )


def _text(line: int, value: dict[str, Any], name: str) -> str:
    text = value[name]
    if not isinstance(text, str):
        raise BadRecord(line, f"{name!r} must be a string")
    if len(text) > MAX_TEXT_CHARS:
        raise BadRecord(line, f"{name!r} is longer than {MAX_TEXT_CHARS} characters")
    return text


def _timestamp(line: int, value: Any) -> datetime:
    if not isinstance(value, str):
        raise BadRecord(line, "'timestamp' must be an ISO 8601 string")
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise BadRecord(line, f"'timestamp' is not ISO 8601: {value[:40]!r}") from None
    if when.tzinfo is None:
        raise BadRecord(line, "'timestamp' needs a timezone (e.g. Z or +00:00)")
    return when


def _citation(line: int, index: int, value: Any) -> CitedRef:
    where = f"citation {index}"
    if isinstance(value, str):
        _check_length(line, where, value)
        try:
            return cited_text(value)
        except InvalidValue as exc:
            raise BadRecord(line, f"{where}: {exc}") from None
    if not isinstance(value, dict):
        raise BadRecord(line, f"{where} must be a string or an object")
    unknown = sorted(set(value) - _CITATION_KEYS)
    if unknown:
        raise BadRecord(line, f"{where}: unknown field {unknown[0]!r}")
    fields: dict[str, str] = {}
    for name in ("url", "path", "doc_id"):
        if value.get(name) is not None:
            if not isinstance(value[name], str) or not value[name]:
                raise BadRecord(line, f"{where}: {name!r} must be a non-empty string")
            _check_length(line, where, value[name])
            fields[name] = value[name]
    if not fields:
        raise BadRecord(line, f"{where} names no url, path or doc_id")
    if "url" in fields and "path" in fields:
        raise BadRecord(line, f"{where} has both a url and a path: one link per citation")
    version = value.get("version")
    if version is not None:
        try:
            check_int(version, low=1, high=MAX_VERSION, what=f"{where}: 'version'")
        except InvalidValue as exc:
            raise BadRecord(line, str(exc)) from None
    link = fields.get("url") or fields.get("path")
    text = link or fields["doc_id"]
    if link and "doc_id" in fields:
        text += f" for {fields['doc_id']}"
    return CitedRef(
        text=text if version is None else f"{text} version {version}",
        url=fields.get("url"),
        path=fields.get("path"),
        doc_id=fields.get("doc_id"),
        version=version,
    )


def _check_length(line: int, where: str, text: str) -> None:
    if len(text) > MAX_CITATION_CHARS:
        raise BadRecord(line, f"{where} is longer than {MAX_CITATION_CHARS} characters")


def cited_text(text: str) -> CitedRef:
    """A citation given as one string: a URL, a path or a document id (``ID@3``);
    ``InvalidValue`` when the version after ``@`` is out of range."""
    if _SCHEME.match(text):
        return CitedRef(text=text, url=text)
    if text.startswith("/"):
        return CitedRef(text=text, path=text)
    versioned = _VERSIONED_ID.fullmatch(text)
    if versioned is not None:
        return CitedRef(
            text=text,
            doc_id=versioned.group("id"),
            version=parse_int(
                versioned.group("version"), low=0, high=MAX_VERSION, what="the version after @"
            ),
        )
    return CitedRef(text=text, doc_id=text)
