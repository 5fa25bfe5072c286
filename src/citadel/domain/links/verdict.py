"""What the link policy answers: the link to render, or why there is none."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class LinkRefusal(enum.StrEnum):
    """Why a URL may not be rendered as a link; the values are stable codes."""

    TOO_LONG = "too_long"
    CONTROL_OR_SPACE = "control_or_space"
    BACKSLASH = "backslash"
    UNSAFE_CHARACTER = "unsafe_character"
    ENCODED_CONTROL = "encoded_control"
    MALFORMED = "malformed"
    NOT_HTTPS = "not_https"
    EMPTY_HOST = "empty_host"
    USERINFO = "userinfo"
    BAD_PORT = "bad_port"
    EMPTY_LABEL = "empty_label"
    TRAILING_DOT = "trailing_dot"
    INVALID_IDN = "invalid_idn"
    IP_LITERAL = "ip_literal"
    LOCALHOST = "localhost"
    SINGLE_LABEL = "single_label"
    INTERNAL_NAME = "internal_name"
    MIXED_SCRIPT = "mixed_script"
    CONFUSABLE = "confusable"
    HOST_NOT_ALLOWED = "host_not_allowed"


@dataclass(frozen=True, slots=True)
class Link:
    """A URL the policy accepted, in the one form that may be rendered."""

    url: str
    host: str
    """Lower-case ASCII (punycode), no trailing dot, no port."""
