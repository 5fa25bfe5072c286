"""Signed viewer links: bound to reader, source, version and span; short-lived; unforgeable."""

from __future__ import annotations

import pytest

from citadel.domain.errors import InvalidValue
from citadel.domain.viewer import ViewerLinkRefused, ViewerRefusal, ViewerSigner

SECRET = b"k" * 32
NOW = 1_800_000_000.0


def signer() -> ViewerSigner:
    return ViewerSigner(SECRET)


def token(now: float = NOW, user: str = "ann") -> str:
    return signer().mint(user, "src-1", 2, "chunk-9", now)


def verify(tok: str, *, now: float = NOW, user: str = "ann", version: int = 2) -> object:
    return signer().verify(tok, user_id=user, source_id="src-1", version=version, now=now)


def refusal(tok: str, **kwargs: object) -> ViewerRefusal:
    with pytest.raises(ViewerLinkRefused) as caught:
        verify(tok, **kwargs)  # type: ignore[arg-type]
    return caught.value.reason


def test_a_fresh_link_is_accepted_with_its_span() -> None:
    grant = verify(token())
    assert grant.chunk_id == "chunk-9"  # type: ignore[attr-defined]
    assert 240 <= grant.expires - NOW <= 300  # type: ignore[attr-defined]


def test_links_never_live_past_five_minutes() -> None:
    for offset in (0.0, 0.5, 29.9, 59.99):
        grant = verify(token(NOW + offset), now=NOW + offset)
        assert grant.expires - (NOW + offset) <= 300  # type: ignore[attr-defined]
    with pytest.raises(InvalidValue):
        ViewerSigner(SECRET, ttl_s=301)


def test_the_same_minute_gives_the_same_link() -> None:
    start = 60 * (NOW // 60)
    assert token(start + 1) == token(start + 59)
    assert token(start + 1) != token(start + 61)


def test_an_expired_link_is_refused() -> None:
    assert refusal(token(), now=NOW + 301) is ViewerRefusal.EXPIRED


def test_another_reader_or_version_is_refused() -> None:
    assert refusal(token(), user="bob") is ViewerRefusal.WRONG_READER
    assert refusal(token(), version=3) is ViewerRefusal.WRONG_TARGET


@pytest.mark.parametrize(
    "tamper",
    [
        lambda t: t[:-2] + ("AA" if t[-2:] != "AA" else "BB"),  # the MAC
        lambda t: "x" + t[1:],  # the body
        lambda t: t.replace(".", "", 1),  # no separator
        lambda t: t.split(".")[0] + ".",  # no MAC
        lambda t: t + "é",  # not ASCII
        lambda t: "",  # nothing
    ],
)
def test_an_altered_link_is_refused(tamper: object) -> None:
    reason = refusal(tamper(token()))  # type: ignore[operator]
    assert reason in (ViewerRefusal.TAMPERED, ViewerRefusal.MALFORMED)


def test_a_link_signed_with_another_secret_is_refused() -> None:
    other = ViewerSigner(b"z" * 32).mint("ann", "src-1", 2, "chunk-9", NOW)
    assert refusal(other) is ViewerRefusal.TAMPERED


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(InvalidValue):
        ViewerSigner(b"short")


def test_the_href_is_the_versioned_viewer_route() -> None:
    href = signer().href("ann", "src/1", 2, "c 9", NOW)
    assert href.startswith("/v1/sources/src%2F1/versions/2/view?chunk=c%209&token=")
