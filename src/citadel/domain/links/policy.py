"""The link policy: the hosts links may point to, and the verdict on one URL.

See :mod:`citadel.domain.links` for what the policy guards and the judgement
calls it makes.
"""

from __future__ import annotations

from dataclasses import dataclass

from citadel.domain.errors import InvalidValue
from citadel.domain.links.hosts import canonical_host, single_script, skeleton_of, to_unicode_host
from citadel.domain.links.urls import (
    SCHEME,
    encoded_character_refusal,
    host_of,
    is_forbidden,
    raw_character_refusal,
    urlsplit_agrees,
)
from citadel.domain.links.verdict import Link, LinkRefusal


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
        refusal = raw_character_refusal(url) or encoded_character_refusal(url)
        if refusal is not None:
            return refusal
        scheme = SCHEME.match(url)
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
        raw_host = host_of(authority)
        if isinstance(raw_host, LinkRefusal):
            return raw_host
        host = canonical_host(raw_host)
        if isinstance(host, LinkRefusal):
            return host
        ascii_host, unicode_labels = host
        if any(not single_script(label) for label in unicode_labels):
            return LinkRefusal.MIXED_SCRIPT
        if self._confusable(ascii_host, unicode_labels):
            return LinkRefusal.CONFUSABLE
        if not self._allows(ascii_host):
            return LinkRefusal.HOST_NOT_ALLOWED
        normalised = f"https://{ascii_host}{tail}"
        if len(normalised) > self.max_length:
            return LinkRefusal.TOO_LONG
        if not urlsplit_agrees(normalised, ascii_host):
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
        skeleton = skeleton_of(".".join(unicode_labels))
        for target in (*exact, *suffixes):
            if host != target and skeleton == skeleton_of(to_unicode_host(target)):
                return True
        for suffix in suffixes:
            if not host.endswith("." + suffix) and skeleton.endswith(
                "." + skeleton_of(to_unicode_host(suffix))
            ):
                return True
        return any(not label.isascii() and skeleton_of(label).isascii() for label in unicode_labels)


def _allowlist_entry(entry: str) -> str:
    """An allowlist entry in canonical form; raises ``InvalidValue`` for one that cannot work."""
    text = entry.strip()
    wildcard = text.startswith("*.")
    name = text[2:] if wildcard else text
    if not name or "*" in name:
        raise InvalidValue("an allowed host is a host name or '*.' and a host name")
    if any(char in name for char in ":/?#@[]%\\") or any(is_forbidden(char) for char in name):
        raise InvalidValue("an allowed host is a bare host name: no scheme, port, path or userinfo")
    host = canonical_host(name)
    if isinstance(host, LinkRefusal):
        raise InvalidValue(f"an allowed host can never be linked to ({host})")
    ascii_host, unicode_labels = host
    if any(not single_script(label) for label in unicode_labels):
        raise InvalidValue(f"an allowed host mixes scripts in one label ({ascii_host})")
    return f"*.{ascii_host}" if wildcard else ascii_host
