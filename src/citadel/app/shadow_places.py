"""Every place the registry has recorded a source at, looked up by a cited link.

Two links name the same place when their hosts are the same host (case, IDN
spelling in Unicode or punycode, and a default port do not matter), their paths
are equal but for a trailing slash, and their queries are equal; the scheme
(http or https) and the fragment (a place within the page) do not matter. A
query does: a server may serve another document for another query, so a link
whose query no registered URL has is not a registered URL. Path case matters
(paths are case-sensitive). Origins (the paths sources were ingested from) are
compared as they were recorded, also when cited as ``file://`` URLs.
"""

from __future__ import annotations

import encodings.idna
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from citadel.app.ports import SourceLocation
from citadel.domain.links.hosts import IDNA_DEVIATIONS

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_IDNA_DOTS = re.compile("[.\u3002\uff0e\uff61]")
_LDH = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


@dataclass(frozen=True, slots=True)
class UrlKey:
    host: str = ""
    """Lower-case punycode, with ``:port`` when not the scheme's default."""
    path: str = ""
    query: str = ""
    path_key: str | None = None
    """For a ``file:`` URL: the local path it names (compared with origins)."""


def url_key(text: str) -> UrlKey | str:
    """The place ``text`` names, or why it names none (a citadel-readable reason)."""
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        return "malformed: whitespace or control characters in the link"
    scheme_match = _SCHEME.match(text)
    if scheme_match is None:
        return "malformed: no scheme"
    scheme = scheme_match.group(1).lower()
    if scheme == "file":
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost") or not parts.path:
            return "malformed: a file link names no local path"
        return UrlKey(path_key=unquote(parts.path))
    if scheme not in _DEFAULT_PORTS:
        return f"not a web link ({scheme}:)"
    if "\\" in text:
        return "malformed: a backslash in the link"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return "malformed: the host or port cannot be read"
    netloc = parts.netloc
    if not netloc:
        return "malformed: no host"
    if "@" in netloc:
        return "userinfo before the host: a disguised link"
    raw_host = (
        netloc.rsplit(":", 1)[0] if parts.port is not None or netloc.endswith(":") else netloc
    )
    ascii_host = host_key(raw_host)
    if ascii_host is None:
        return "not a host name"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        ascii_host = f"{ascii_host}:{port}"
    path = parts.path or "/"
    if len(path) > 1:
        path = path.rstrip("/") or "/"
    return UrlKey(host=ascii_host, path=path, query=parts.query)


def host_key(host: str) -> str | None:
    """``host`` in lower-case punycode, labels split as IDNA splits them; None when it is
    no host name. Reserved and internal names pass: a cited link may name any host, and
    only registered ones (which passed the link policy) match anything."""
    if not host or host.startswith("["):
        return None  # an IP literal: no source is registered at one
    if any(char in IDNA_DEVIATIONS for char in host):
        # Python's codec (IDNA 2003) maps these away; a browser keeps them and opens
        # another host, which the link policy never registers (``invalid_idn``).
        return None
    labels = _IDNA_DOTS.split(host)
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()  # one trailing dot names the same host
    ascii_labels: list[str] = []
    for label in labels:
        if not label:
            return None
        try:
            ascii_label = label if label.isascii() else encodings.idna.ToASCII(label).decode()
        except UnicodeError:
            return None
        if not _LDH.fullmatch(ascii_label):
            return None
        ascii_labels.append(ascii_label.lower())
    return ".".join(ascii_labels)


class Places:
    """The registry's locations, indexed for lookup."""

    def __init__(self, locations: Sequence[SourceLocation]) -> None:
        self._urls: dict[tuple[str, str, str], list[SourceLocation]] = {}
        self._paths: set[tuple[str, str]] = set()
        self._hosts: set[str] = set()
        self._origins: dict[str, list[SourceLocation]] = {}
        for place in locations:
            if place.kind == "origin":
                self._origins.setdefault(place.location, []).append(place)
                continue
            key = url_key(place.location)
            if isinstance(key, str) or key.path_key is not None:
                continue  # not a web URL: never registered through the link policy
            self._urls.setdefault((key.host, key.path, key.query), []).append(place)
            self._paths.add((key.host, key.path))
            self._hosts.add(key.host)

    def url(self, key: UrlKey) -> Sequence[SourceLocation] | None:
        return self._urls.get((key.host, key.path, key.query))

    def origin(self, path: str) -> Sequence[SourceLocation] | None:
        return self._origins.get(path)

    def why_unknown(self, key: UrlKey) -> str:
        if key.host not in self._hosts:
            return f"no registered source is on {key.host}"
        if (key.host, key.path) in self._paths:
            return f"no registered URL on {key.host} has this path with this query"
        return f"no registered URL on {key.host} has this path"
