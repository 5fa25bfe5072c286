"""URL rules: the characters a link may carry, its scheme and its authority.

Everything but the host's own name is checked here: raw and percent-encoded
characters, the ``https`` scheme, userinfo, IP brackets and the port; and, last,
that the standard parser reads the normalised URL the same way.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote, urlsplit

from citadel.domain.links.hosts import INVISIBLE
from citadel.domain.links.verdict import LinkRefusal

SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_BARE_IPV6 = re.compile(r"[0-9A-Fa-f:.]+")
_MAX_DECODE_ROUNDS = 4

# Controls, format characters (bidi overrides, zero-width joiners, BOM),
# surrogates, private use, unassigned, and every kind of space or separator.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})
# Characters that end an HTML attribute or a Markdown autolink; a canonical URL
# carries them percent-encoded.
_UNSAFE_ASCII = frozenset('"<>`')


def is_forbidden(char: str) -> bool:
    return (
        char == "\\"
        or char in INVISIBLE
        or unicodedata.category(char) in _FORBIDDEN_CATEGORIES
        or char.isspace()
    )


def raw_character_refusal(url: str) -> LinkRefusal | None:
    for char in url:
        if char == "\\":
            return LinkRefusal.BACKSLASH
        if is_forbidden(char):
            return LinkRefusal.CONTROL_OR_SPACE
        if char in _UNSAFE_ASCII:
            return LinkRefusal.UNSAFE_CHARACTER
    return None


def encoded_character_refusal(url: str) -> LinkRefusal | None:
    """Refuse what percent-decoding would reveal, however many times it is decoded."""
    text = url
    for _ in range(_MAX_DECODE_ROUNDS):
        if "%" not in text:
            return None
        decoded = unquote(text, errors="replace")
        if decoded == text:
            return None
        if any(is_forbidden(char) for char in decoded):
            return LinkRefusal.ENCODED_CONTROL
        text = decoded
    # Still decoding after that many rounds: nested encoding only hides things.
    return LinkRefusal.ENCODED_CONTROL if unquote(text, errors="replace") != text else None


def _fully_decoded(text: str) -> str:
    for _ in range(_MAX_DECODE_ROUNDS):
        decoded = unquote(text, errors="replace")
        if decoded == text:
            break
        text = decoded
    return text


def host_of(authority: str) -> str | LinkRefusal:
    """The host named by the raw authority; userinfo, IP brackets and ports are checked here.

    ``urlsplit`` would happily split ``a@b@c`` or ``host:junk``; the authority
    is read by hand instead, and then compared with what ``urlsplit`` made of
    the normalised URL.
    """
    if not authority:
        return LinkRefusal.EMPTY_HOST
    mapped = unicodedata.normalize("NFKC", authority)
    if "@" in authority or "@" in mapped or "@" in _fully_decoded(authority):
        return LinkRefusal.USERINFO
    if authority.startswith("["):
        return LinkRefusal.IP_LITERAL  # IPv6, IPv4-mapped, zone ids, IPvFuture
    if "%" in authority or "[" in authority or "]" in authority:
        return LinkRefusal.MALFORMED
    if authority.count(":") > 1 and _BARE_IPV6.fullmatch(authority):
        return LinkRefusal.IP_LITERAL  # an IPv6 address someone forgot to bracket
    host, colon, port = authority.partition(":")
    if colon and port != "443":
        return LinkRefusal.BAD_PORT
    if not host:
        return LinkRefusal.EMPTY_HOST
    # Characters that IDNA mapping would turn into delimiters (full-width
    # colon, solidus, ...); the stdlib codec maps them without complaint.
    mapped_host = unicodedata.normalize("NFKC", host)
    if ":" in mapped_host:
        return LinkRefusal.BAD_PORT
    if any(char in "/?#[]%" for char in mapped_host):
        return LinkRefusal.MALFORMED
    return host


def urlsplit_agrees(url: str, host: str) -> bool:
    """A tripwire: the standard parser must read the normalised URL the same way."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
        port = parts.port
    except ValueError:
        return False
    return parts.scheme == "https" and parts.netloc == host and hostname == host and port is None
