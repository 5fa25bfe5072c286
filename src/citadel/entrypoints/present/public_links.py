"""Links as a reader outside the server opens them: routes under ``CITADEL_PUBLIC_URL``.

The resolver's viewer links are routes of ``citadel serve`` (``/v1/sources/…``): a
page of the web UI follows them as they are, but a terminal or an agent has no
server to resolve them against. Where the public URL is set, the CLI and MCP
print them under it; where it is not, they stay routes, and the terminal says how
to make them whole. Only the resolver's routes change: a canonical URL is already
absolute, and no link is made where the resolver gave none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from citadel.app.resolver import ResolvedLink
from citadel.domain.answer import AnswerResult, CitedSegment

RELATIVE_NOTE = (
    "(viewer links are routes of `citadel serve`: set CITADEL_PUBLIC_URL to the URL"
    " browsers reach it at to print them whole)"
)


def is_route(href: str | None) -> bool:
    """A route of this server (``/v1/…``), not a URL of its own."""
    return href is not None and href.startswith("/") and not href.startswith("//")


def absolute(href: str | None, public_url: str) -> str | None:
    """``href`` under ``public_url`` when it is a route and the URL is set; else as it is."""
    if public_url and href is not None and is_route(href):
        return public_url + href
    return href


def absolute_link(link: ResolvedLink, public_url: str) -> ResolvedLink:
    return replace(link, href=absolute(link.href, public_url))


def absolute_links(result: AnswerResult, public_url: str) -> AnswerResult:
    """``result`` with every citation's route under ``public_url`` (none when it is unset)."""
    if result.answer is None or not public_url:
        return result
    segments = tuple(
        CitedSegment(
            text=segment.text,
            citations=tuple(
                replace(c, link_href=absolute(c.link_href, public_url)) for c in segment.citations
            ),
        )
        for segment in result.answer.segments
    )
    return replace(result, answer=replace(result.answer, segments=segments))


def relative_note(hrefs: Iterable[str | None], public_url: str) -> str:
    """One line for under a list of links some of which are still routes; else empty."""
    if public_url or not any(is_route(h) for h in hrefs):
        return ""
    return RELATIVE_NOTE
