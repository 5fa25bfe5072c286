"""Which canonical URLs may be rendered as links.

A book's canonical URL is shown to readers as a link and nothing more: the
application never fetches a URL it stores or shows, so there is no server-side
request forgery surface here. What this policy guards is the reader. A link it
accepts goes over HTTPS to a host the operator put on the allowlist, cannot be
disguised (userinfo, IP literals, internal names, homographs) and cannot break
out of the markup it is rendered into (controls, whitespace, backslashes).

The policy is a pure function and runs twice: when a URL is registered, where
only the normalised form is stored, and again when it is rendered, so a URL
stored before the allowlist shrank, or written to the catalogue by other means,
is refused all the same. Render :attr:`Link.url`, never the raw input: the
checks are made on that form.

Judgement calls, each pinned by a test:

* A trailing dot (``docs.example.org.``) is refused, not normalised away: a
  canonical URL has no reason to carry one, and browsers treat it as another
  origin.
* Host text is mapped the way IDNA maps it (as browsers do): Unicode full
  stops (U+3002, U+FF0E, U+FF61) separate labels, compatibility forms
  (full-width, circled) become ASCII, upper case becomes lower case. The
  mapped host is what is checked and rendered, so ``docs。example。org`` is
  ``docs.example.org``.
* The stdlib codec implements IDNA 2003. The characters where IDNA 2003 and
  IDNA 2008 (and so browsers) disagree, ß and final sigma, are refused rather
  than mapped, so the rendered host is never a different one from the one the
  author wrote; a label that does not survive the IDNA 2003 round trip is
  refused as ``invalid_idn``.
* Percent-encoding is refused in the host outright. Anywhere else an encoded
  control, whitespace (``%20`` included), format character or backslash is
  refused, decoding repeatedly so that ``%250a`` counts too.
* Homographs matter under a ``*.suffix`` entry (an exact entry is matched in
  punycode, which no look-alike shares). A label mixing scripts is refused
  (Latin with Han, kana or Hangul excepted, as in UTS #39); so is a host whose
  confusable skeleton is an allowlisted name it is not, and a non-ASCII label
  made only of look-alikes of ASCII letters, which also refuses a few genuine
  words such as Cyrillic "рус": the cost is a missing link, never a wrong one.
* Raw non-ASCII letters in the path, query and fragment are accepted (the
  renderer escapes them); only the host is rewritten.
* ``:443`` is accepted and dropped from the normalised URL; any other port,
  including ``0443``, is refused.
"""

from __future__ import annotations

import encodings.idna
import enum
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from citadel.domain.errors import InvalidValue


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


@dataclass(frozen=True, slots=True)
class LinkPolicy:
    """The hosts links may point to, and the longest link that may be shown.

    ``allowed_hosts`` holds exact hosts (``docs.example.org``) and ``*.suffix``
    patterns, which match any subdomain of ``suffix`` at any depth but not
    ``suffix`` itself (list it too when it is wanted). Entries are normalised to
    lower-case punycode on construction; an entry no URL could ever pass with
    (an IP address, ``localhost``, a single label, an internal name, a wildcard
    over a top-level domain) is refused. An empty allowlist renders no links.
    """

    allowed_hosts: tuple[str, ...]
    max_length: int = 2048

    def __post_init__(self) -> None:
        if self.max_length < 1:
            raise InvalidValue("max_length must be at least 1")
        normalised: list[str] = []
        for entry in self.allowed_hosts:
            canonical = _allowlist_entry(entry)
            if canonical not in normalised:
                normalised.append(canonical)
        object.__setattr__(self, "allowed_hosts", tuple(normalised))

    @classmethod
    def parse(cls, text: str, *, max_length: int = 2048) -> LinkPolicy:
        """The policy named by ``CITADEL_LINK_ALLOWED_HOSTS``: comma-separated entries.

        Blank entries are ignored, so a trailing comma is harmless and an empty
        value means no links at all.
        """
        entries = tuple(part.strip() for part in text.split(",") if part.strip())
        return cls(allowed_hosts=entries, max_length=max_length)

    def evaluate(self, url: str) -> Link | LinkRefusal:
        """The normalised link, or the first reason it may not be rendered."""
        if len(url) > self.max_length:
            return LinkRefusal.TOO_LONG
        if not url:
            return LinkRefusal.MALFORMED
        refusal = _raw_character_refusal(url) or _encoded_character_refusal(url)
        if refusal is not None:
            return refusal
        scheme = _SCHEME.match(url)
        if scheme is None or url[scheme.end() : scheme.end() + 1] != ":":
            return LinkRefusal.NOT_HTTPS  # no scheme: relative or protocol-relative
        if scheme.group().lower() != "https":
            return LinkRefusal.NOT_HTTPS
        rest = url[scheme.end() + 1 :]
        if not rest.startswith("//"):
            return LinkRefusal.MALFORMED  # "https:host" and "https:/host" are not URLs
        rest = rest[2:]
        end = next((i for i, char in enumerate(rest) if char in "/?#"), len(rest))
        authority, tail = rest[:end], rest[end:]
        raw_host = _host_of(authority)
        if isinstance(raw_host, LinkRefusal):
            return raw_host
        host = _canonical_host(raw_host)
        if isinstance(host, LinkRefusal):
            return host
        ascii_host, unicode_labels = host
        if any(not _single_script(label) for label in unicode_labels):
            return LinkRefusal.MIXED_SCRIPT
        if self._confusable(ascii_host, unicode_labels):
            return LinkRefusal.CONFUSABLE
        if not self._allows(ascii_host):
            return LinkRefusal.HOST_NOT_ALLOWED
        normalised = f"https://{ascii_host}{tail}"
        if len(normalised) > self.max_length:
            return LinkRefusal.TOO_LONG
        if not _urlsplit_agrees(normalised, ascii_host):
            return LinkRefusal.MALFORMED
        return Link(url=normalised, host=ascii_host)

    def check(self, url: str) -> LinkRefusal | None:
        """None when ``url`` may be rendered as a link, else the reason it may not."""
        verdict = self.evaluate(url)
        return verdict if isinstance(verdict, LinkRefusal) else None

    def normalise(self, url: str) -> str:
        """The form of ``url`` to store and render; raises ``InvalidValue`` when refused."""
        verdict = self.evaluate(url)
        if isinstance(verdict, LinkRefusal):
            raise InvalidValue(f"link refused: {verdict}")
        return verdict.url

    def _exact_hosts(self) -> tuple[str, ...]:
        return tuple(entry for entry in self.allowed_hosts if not entry.startswith("*."))

    def _suffixes(self) -> tuple[str, ...]:
        return tuple(entry[2:] for entry in self.allowed_hosts if entry.startswith("*."))

    def _allows(self, host: str) -> bool:
        return host in self._exact_hosts() or any(
            host.endswith("." + suffix) for suffix in self._suffixes()
        )

    def _confusable(self, host: str, unicode_labels: tuple[str, ...]) -> bool:
        """True when ``host`` looks like an allowlisted name without being it.

        Only matters under a wildcard: an exact entry is matched in punycode,
        which no look-alike shares. An exact entry is never confusable, since
        the operator named it; any other host is, when its skeleton is that of
        an exact entry or a wildcard's suffix, when its skeleton falls under a
        wildcard the host itself does not, or when a label of non-ASCII letters
        is made entirely of look-alikes of ASCII ones (``ѕсоре``).
        """
        exact = self._exact_hosts()
        if host in exact:
            return False
        suffixes = self._suffixes()
        skeleton = _skeleton(".".join(unicode_labels))
        for target in (*exact, *suffixes):
            if host != target and skeleton == _skeleton(_to_unicode_host(target)):
                return True
        for suffix in suffixes:
            if not host.endswith("." + suffix) and skeleton.endswith(
                "." + _skeleton(_to_unicode_host(suffix))
            ):
                return True
        return any(not label.isascii() and _skeleton(label).isascii() for label in unicode_labels)


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_IDNA_DOTS = re.compile("[.\u3002\uff0e\uff61]")
_LDH_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# WHATWG hands a host whose last label is a number in any base to its IPv4
# parser: 2130706433, 0x7f000001, 0177.0.0.1, 127.1 all reach 127.0.0.1.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_BARE_IPV6 = re.compile(r"[0-9A-Fa-f:.]+")
_MAX_HOST = 253
_MAX_DECODE_ROUNDS = 4

# Controls, format characters (bidi overrides, zero-width joiners, BOM),
# surrogates, private use, unassigned, and every kind of space or separator.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})
# Letters and marks that render as nothing: fillers, blank braille, the
# grapheme joiner and the variation selectors.
_INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180e\u2800\u3164\uffa0"
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))
    + "".join(chr(c) for c in range(0xE0100, 0xE01F0))
)
# Characters that end an HTML attribute or a Markdown autolink; a canonical URL
# carries them percent-encoded.
_UNSAFE_ASCII = frozenset('"<>`')
# IDNA 2003 maps these; IDNA 2008 keeps them. Either way a reader would land on
# a host other than the one the author wrote.
_IDNA_DEVIATIONS = frozenset("\u00df\u03c2")

# Special-use and never-delegated top-level names (RFC 2606, 6761, 6762, 8375,
# 9476, and the habits of internal networks). "example.org" is an ordinary
# name; only "example" as the last label is reserved.
_INTERNAL_TLDS = frozenset(
    {
        "alt",
        "arpa",
        "corp",
        "example",
        "home",
        "internal",
        "intranet",
        "invalid",
        "lan",
        "local",
        "localdomain",
        "onion",
        "private",
        "test",
    }
)

# Letters of other scripts, and ASCII digits, that pass for ASCII letters in
# common fonts: a small, deliberate subset of Unicode's confusables.txt.
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a",
        "в": "b",
        "е": "e",
        "і": "i",
        "ј": "j",
        "к": "k",
        "о": "o",
        "р": "p",
        "с": "c",
        "х": "x",
        "у": "y",
        "ѕ": "s",
        "ԁ": "d",
        "һ": "h",
        "ԛ": "q",
        "ԝ": "w",
        "ү": "y",
        "ӏ": "l",
        # Greek
        "α": "a",
        "γ": "y",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "υ": "u",
        "χ": "x",
        # Armenian
        "հ": "h",
        "ո": "n",
        "ս": "u",
        "օ": "o",
        # Latin look-alikes of other Latin letters
        "ı": "i",
        "ȷ": "j",
        "ɑ": "a",
        "ɡ": "g",
        "ɩ": "i",
        # ASCII digits
        "0": "o",
        "1": "l",
    }
)

# Script sets one label may combine (UTS #39, "highly restrictive").
_SCRIPT_COMBINATIONS = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
_SCRIPT_ALIASES = {
    "CJK": "HAN",
    "IDEOGRAPHIC": "HAN",
    "KATAKANA-HIRAGANA": "KATAKANA",
    "ARABIC-INDIC": "ARABIC",
    "EXTENDED": "ARABIC",  # EXTENDED ARABIC-INDIC DIGIT ...
}


def _forbidden(char: str) -> bool:
    return (
        char == "\\"
        or char in _INVISIBLE
        or unicodedata.category(char) in _FORBIDDEN_CATEGORIES
        or char.isspace()
    )


def _raw_character_refusal(url: str) -> LinkRefusal | None:
    for char in url:
        if char == "\\":
            return LinkRefusal.BACKSLASH
        if _forbidden(char):
            return LinkRefusal.CONTROL_OR_SPACE
        if char in _UNSAFE_ASCII:
            return LinkRefusal.UNSAFE_CHARACTER
    return None


def _encoded_character_refusal(url: str) -> LinkRefusal | None:
    """Refuse what percent-decoding would reveal, however many times it is decoded."""
    text = url
    for _ in range(_MAX_DECODE_ROUNDS):
        if "%" not in text:
            return None
        decoded = unquote(text, errors="replace")
        if decoded == text:
            return None
        if any(_forbidden(char) for char in decoded):
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


def _host_of(authority: str) -> str | LinkRefusal:
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


def _canonical_host(host: str) -> tuple[str, tuple[str, ...]] | LinkRefusal:
    """The host as lower-case punycode, with its labels in Unicode; or why it is no host."""
    if any(char in _IDNA_DEVIATIONS for char in host):
        return LinkRefusal.INVALID_IDN
    raw_labels = _IDNA_DOTS.split(host)
    trailing_dot = len(raw_labels) > 1 and raw_labels[-1] == ""
    if trailing_dot:
        raw_labels.pop()
    if any(not label for label in raw_labels):
        return LinkRefusal.EMPTY_LABEL
    ascii_labels: list[str] = []
    for label in raw_labels:
        if label.isascii():
            ascii_label = label.lower()
        else:
            try:
                ascii_label = encodings.idna.ToASCII(label).decode("ascii").lower()
            except UnicodeError:
                return LinkRefusal.INVALID_IDN
        if not _LDH_LABEL.fullmatch(ascii_label):
            return LinkRefusal.MALFORMED if label.isascii() else LinkRefusal.INVALID_IDN
        ascii_labels.append(ascii_label)
    ascii_host = ".".join(ascii_labels)
    if len(ascii_host) > _MAX_HOST:
        return LinkRefusal.MALFORMED
    last = ascii_labels[-1]
    if _NUMERIC_LABEL.fullmatch(last):
        return LinkRefusal.IP_LITERAL
    if last == "localhost":
        return LinkRefusal.LOCALHOST
    if len(ascii_labels) == 1:
        return LinkRefusal.SINGLE_LABEL
    if last in _INTERNAL_TLDS:
        return LinkRefusal.INTERNAL_NAME
    if trailing_dot:
        return LinkRefusal.TRAILING_DOT
    unicode_labels: list[str] = []
    for ascii_label in ascii_labels:
        unicode_label = _to_unicode_label(ascii_label)
        if unicode_label is None:
            return LinkRefusal.INVALID_IDN
        unicode_labels.append(unicode_label)
    return ascii_host, tuple(unicode_labels)


def _to_unicode_label(label: str) -> str | None:
    """The Unicode form of an ASCII label; None for a punycode label IDNA would not produce.

    A decoded label may hold only letters, marks, digits and hyphens: the
    punycode form can carry anything, symbols and invisible fillers included,
    and a label may not open with a combining mark.
    """
    if not label.startswith("xn--"):
        return label
    try:
        decoded = encodings.idna.ToUnicode(label)
    except (ValueError, OverflowError, IndexError):  # the punycode codec's failures
        return None
    if not decoded or unicodedata.category(decoded[0]).startswith("M"):
        return None  # a combining mark needs a base to sit on
    for char in decoded:
        if char in _INVISIBLE or char in _IDNA_DEVIATIONS:
            return None
        if char != "-" and unicodedata.category(char) not in {"Ll", "Lo", "Lm", "Mn", "Mc", "Nd"}:
            return None
    return decoded


def _to_unicode_host(host: str) -> str:
    return ".".join(_to_unicode_label(label) or label for label in host.split("."))


def _script(char: str) -> str | None:
    """The script of a letter or digit, from its Unicode name; None when it has none of its own."""
    if char.isascii():
        return "LATIN" if char.isalpha() else None
    category = unicodedata.category(char)
    if category.startswith("M"):
        return None  # combining marks inherit the script of their base
    first = unicodedata.name(char, "UNNAMED").split(" ", 1)[0]
    return _SCRIPT_ALIASES.get(first, first)


def _single_script(label: str) -> bool:
    scripts = {script for script in map(_script, label) if script is not None}
    return len(scripts) <= 1 or any(scripts <= allowed for allowed in _SCRIPT_COMBINATIONS)


def _skeleton(text: str) -> str:
    """What a name looks like: confusable letters mapped to ASCII, "rn" read as "m"."""
    return text.translate(_CONFUSABLES).replace("rn", "m").replace("vv", "w")


def _urlsplit_agrees(url: str, host: str) -> bool:
    """A tripwire: the standard parser must read the normalised URL the same way."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
        port = parts.port
    except ValueError:
        return False
    return parts.scheme == "https" and parts.netloc == host and hostname == host and port is None


def _allowlist_entry(entry: str) -> str:
    """An allowlist entry in canonical form; raises ``InvalidValue`` for one that cannot work."""
    text = entry.strip()
    wildcard = text.startswith("*.")
    name = text[2:] if wildcard else text
    if not name or "*" in name:
        raise InvalidValue("an allowed host is a host name or '*.' and a host name")
    if any(char in name for char in ":/?#@[]%\\") or any(_forbidden(char) for char in name):
        raise InvalidValue("an allowed host is a bare host name: no scheme, port, path or userinfo")
    host = _canonical_host(name)
    if isinstance(host, LinkRefusal):
        raise InvalidValue(f"an allowed host can never be linked to ({host})")
    ascii_host, unicode_labels = host
    if any(not _single_script(label) for label in unicode_labels):
        raise InvalidValue(f"an allowed host mixes scripts in one label ({ascii_host})")
    return f"*.{ascii_host}" if wildcard else ascii_host
