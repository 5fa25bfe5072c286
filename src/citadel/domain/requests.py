"""Request ids: the one rule every entrypoint applies to the id a caller sends.

A request id ties log lines, the audit record and the reply of one request
together. A caller may bring its own (``X-Request-ID`` over HTTP,
``x-request-id`` in gRPC metadata); it is kept when it is short and plain —
1 to 128 characters of ``A-Z a-z 0-9 . _ : -`` — and otherwise replaced by a
fresh one, never refused and never echoed into logs. Every entrypoint applies
this same rule, so an id one of them accepts is accepted by all: the HTTP edge
never forwards an id the gRPC services would replace or refuse.
"""

from __future__ import annotations

import re
import uuid
from typing import TypeGuard

MAX_REQUEST_ID_CHARS = 128
_PLAIN = re.compile(rf"[A-Za-z0-9._:-]{{1,{MAX_REQUEST_ID_CHARS}}}")


def is_valid_request_id(value: object) -> TypeGuard[str]:
    """True when ``value`` is a request id a caller may choose (see the module's rule)."""
    return isinstance(value, str) and _PLAIN.fullmatch(value) is not None


def new_request_id() -> str:
    """A fresh request id (32 hex digits), itself valid under the rule."""
    return uuid.uuid4().hex


def request_id_or_new(value: object) -> str:
    """The caller's id when it is valid, else a fresh one (missing, malformed or not text)."""
    return value if is_valid_request_id(value) else new_request_id()
