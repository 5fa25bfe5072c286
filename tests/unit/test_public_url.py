"""CITADEL_PUBLIC_URL: where browsers reach the server, checked when it is read, and the
absolute links the terminal and agents get from it."""

from __future__ import annotations

import pytest

from citadel.config import ConfigError, Settings
from citadel.entrypoints.present.public_links import absolute, relative_note

ROUTE = "/v1/sources/s1/versions/1/view?chunk=c1&token=abc.def"


def public_url(value: str) -> str:
    return Settings.from_env({"CITADEL_PUBLIC_URL": value}).public_url


def test_no_public_url_by_default() -> None:
    assert Settings.from_env({}).public_url == ""
    assert public_url("  ") == ""


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://citadel.example.org", "https://citadel.example.org"),
        ("https://citadel.example.org/", "https://citadel.example.org"),
        ("HTTPS://Citadel.Example.org:8443//", "https://citadel.example.org:8443"),
        ("http://localhost:8000/books/", "http://localhost:8000/books"),
        (" http://127.0.0.1:8000 ", "http://127.0.0.1:8000"),
    ],
)
def test_a_public_url_is_kept_without_its_trailing_slash(given: str, kept: str) -> None:
    assert public_url(given) == kept


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("citadel.example.org", "http:// or https://"),
        ("ftp://citadel.example.org", "http:// or https://"),
        ("javascript:alert(1)", "http:// or https://"),
        ("https://", "must name a host"),
        ("https:///books", "must name a host"),
        ("https://citadel.example.org/?next=x", "no query"),
        ("https://citadel.example.org/?", "no query"),
        ("https://citadel.example.org/#top", "fragment"),
        ("https://user:pw@citadel.example.org", "user or password"),
        ("https://citadel.example.org:99999", "not a URL"),
        ("https://citadel.example.org/a b", "spaces"),
        ("https://citadel.example.org\\evil", "backslashes"),
    ],
)
def test_a_malformed_public_url_is_refused_naming_the_variable(given: str, said: str) -> None:
    with pytest.raises(ConfigError, match="CITADEL_PUBLIC_URL") as raised:
        public_url(given)
    assert said in str(raised.value)


def test_a_route_is_made_absolute_under_the_public_url_and_nothing_else_is() -> None:
    assert absolute(ROUTE, "https://citadel.example.org") == "https://citadel.example.org" + ROUTE
    assert absolute(ROUTE, "https://example.org/books") == "https://example.org/books" + ROUTE
    assert absolute(ROUTE, "") == ROUTE
    # A canonical URL is already absolute; no href stays none.
    assert absolute("https://docs.example.org/x", "https://c.example") == (
        "https://docs.example.org/x"
    )
    assert absolute(None, "https://c.example") is None


def test_the_note_under_relative_links_says_how_to_make_them_absolute() -> None:
    assert "CITADEL_PUBLIC_URL" in relative_note([ROUTE], "")
    assert relative_note(["https://citadel.example.org" + ROUTE], "https://x") == ""
    assert relative_note(["https://docs.example.org/x"], "") == ""
