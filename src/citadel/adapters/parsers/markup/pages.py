"""One page's events as blocks under section paths."""

from __future__ import annotations

from collections.abc import Sequence

from citadel.adapters.parsers.markup.block_sink import BlockSink
from citadel.adapters.parsers.markup.titles import is_skip_title
from citadel.adapters.parsers.markup.walker import Event, Heading, Paragraph


def emit_page(
    events: Sequence[Event],
    sink: BlockSink,
    *,
    href: str,
    prefix: tuple[str, ...],
    rooted: bool,
    fallback: str,
) -> str:
    """Add a page's paragraphs to ``sink``; returns the page's title.

    ``rooted``: the first heading is the page's title and every later heading nests
    under it, whatever its level (DocBook reference pages put all at ``h2``).
    """
    title: str | None = None
    title_level = 0
    stack: list[tuple[int, str]] = []
    anchor: str | None = None
    path = prefix + ((fallback,) if rooted else ())
    skip = any(is_skip_title(t) for t in path)
    for event in events:
        if isinstance(event, Heading):
            anchor = event.anchor
            if rooted and title is None:
                title, title_level = event.text, event.level
            else:
                rank = event.level * 2
                if rooted and event.level <= title_level:
                    rank = title_level * 2 + 1
                while stack and stack[-1][0] >= rank:
                    stack.pop()
                stack.append((rank, event.text))
            head = prefix + ((title or fallback,) if rooted else ())
            path = head + tuple(text for _, text in stack)
            skip = any(is_skip_title(t) for t in path)
        elif isinstance(event, Paragraph) and not skip:
            sink.add(event.text, path or (fallback,), f"{href}#{anchor}" if anchor else href)
    sink.close()
    return title or fallback


def first_title(events: Sequence[Event], fallback: str) -> str:
    return next((e.text for e in events if isinstance(e, Heading)), fallback)
