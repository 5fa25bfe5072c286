"""Citations on the wire: their link state and the support check of each, both ways.

Split mode shows the reader what one process shows, so every field the answer
service attaches to a citation crosses intact or the response is refused.
"""

from __future__ import annotations

from citadel.domain.answer import Citation, LinkState
from citadel.domain.errors import InvalidValue
from citadel.domain.support import Support, SupportLabel
from citadel.wire.errors import InvalidMessage
from citadel.wire.gen import answer_pb2 as apb

_LINK_CODES: dict[LinkState, apb.LinkState] = {
    LinkState.CANONICAL: apb.LINK_STATE_CANONICAL,
    LinkState.VIEWER: apb.LINK_STATE_VIEWER,
    LinkState.UNAVAILABLE: apb.LINK_STATE_UNAVAILABLE,
    LinkState.FORBIDDEN: apb.LINK_STATE_FORBIDDEN,
    LinkState.DELETED: apb.LINK_STATE_DELETED,
    LinkState.SUPERSEDED: apb.LINK_STATE_SUPERSEDED,
}
_LINKS = {code: state for state, code in _LINK_CODES.items()}
_SUPPORT_CODES: dict[SupportLabel, apb.SupportLabel] = {
    SupportLabel.VERBATIM: apb.SUPPORT_LABEL_VERBATIM,
    SupportLabel.SUPPORTED: apb.SUPPORT_LABEL_SUPPORTED,
    SupportLabel.PARTIAL: apb.SUPPORT_LABEL_PARTIAL,
    SupportLabel.UNSUPPORTED: apb.SUPPORT_LABEL_UNSUPPORTED,
    SupportLabel.CONTRADICTED: apb.SUPPORT_LABEL_CONTRADICTED,
}
_SUPPORTS = {code: label for label, code in _SUPPORT_CODES.items()}


def citation_to_wire(c: Citation) -> apb.Citation:
    link = apb.Link(state=_LINK_CODES[c.link_state])
    if c.link_href is not None:
        link.href = c.link_href
    return apb.Citation(
        ref=c.ref,
        evidence_id=c.evidence_id,
        source_id=c.source_id,
        version=c.version,
        chunk_id=c.chunk_id,
        title=c.title,
        author=c.author,
        chapter=c.chapter,
        section=c.section,
        pages=c.pages,
        link=link,
        support=_support_to_wire(c.support),
    )


def _support_to_wire(support: Support | None) -> apb.Support | None:
    if support is None:
        return None
    message = apb.Support(label=_SUPPORT_CODES[support.label], score=support.score)
    if support.span is not None:
        message.span_start, message.span_end = support.span
    return message


def _support_from_wire(m: apb.Citation) -> Support | None:
    if not m.HasField("support"):
        return None
    label = _SUPPORTS.get(m.support.label)
    if label is None:
        raise InvalidMessage(f"citation {m.ref} has an unknown support label {m.support.label}")
    span = None
    if m.support.HasField("span_start") and m.support.HasField("span_end"):
        span = (m.support.span_start, m.support.span_end)
    try:
        return Support(m.support.score, label, span)
    except InvalidValue as exc:
        raise InvalidMessage(f"citation {m.ref}: {exc}") from None


def citation_from_wire(m: apb.Citation) -> Citation:
    state = _LINKS.get(m.link.state)
    if state is None:
        raise InvalidMessage(f"citation {m.ref} has an unknown link state {m.link.state}")
    return Citation(
        ref=m.ref,
        evidence_id=m.evidence_id,
        source_id=m.source_id,
        version=m.version,
        chunk_id=m.chunk_id,
        title=m.title,
        author=m.author,
        chapter=m.chapter,
        section=m.section,
        pages=m.pages,
        link_state=state,
        link_href=m.link.href if m.link.HasField("href") else None,
        support=_support_from_wire(m),
    )
