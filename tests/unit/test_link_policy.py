"""The link policy: which canonical URLs may be rendered as links.

Every refusal code is reached by concrete hostile URLs; a table of good URLs
pins what must still pass and the form it is normalised to. Property tests show
that the policy never raises on arbitrary text and that nothing it accepts
points off the allowlist or carries whitespace or control characters.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citadel.domain.errors import InvalidValue
from citadel.domain.links import Link, LinkPolicy, LinkRefusal

R = LinkRefusal
POLICY = LinkPolicy(("docs.example.org", "*.python.org"))

CYR_O = "\u043e"  # CYRILLIC SMALL LETTER O
GREEK_O = "\u03bf"  # GREEK SMALL LETTER OMICRON

# (case id, url, expected reason)
HOSTILE: list[tuple[str, str, LinkRefusal]] = [
    # -- schemes other than https, and URLs without one
    ("javascript", "javascript:alert(1)", R.NOT_HTTPS),
    ("javascript mixed case", "JaVaScRiPt:alert(document.domain)", R.NOT_HTTPS),
    ("javascript with slashes", "javascript://docs.example.org/%0aalert(1)", R.ENCODED_CONTROL),
    ("data", "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", R.NOT_HTTPS),
    ("vbscript", "vbscript:msgbox(1)", R.NOT_HTTPS),
    ("file", "file:///etc/passwd", R.NOT_HTTPS),
    ("http on an allowed host", "http://docs.example.org/x", R.NOT_HTTPS),
    ("HTTP upper case", "HTTP://docs.example.org/", R.NOT_HTTPS),
    ("ftp", "ftp://docs.example.org/", R.NOT_HTTPS),
    ("protocol-relative", "//docs.example.org/x", R.NOT_HTTPS),
    ("scheme-less", "docs.example.org/x", R.NOT_HTTPS),
    ("host:port without scheme", "docs.example.org:443", R.NOT_HTTPS),
    ("https without slashes", "https:docs.example.org", R.MALFORMED),
    ("https with one slash", "https:/docs.example.org", R.MALFORMED),
    ("https with three slashes", "https:///docs.example.org", R.EMPTY_HOST),
    ("https and nothing else", "https://", R.EMPTY_HOST),
    ("empty string", "", R.MALFORMED),
    ("port without host", "https://:443/", R.EMPTY_HOST),
    # -- userinfo, plain and disguised
    ("allowed host as username", "https://docs.example.org@evil.com/", R.USERINFO),
    ("user and password", "https://user:pass@docs.example.org/", R.USERINFO),
    ("empty userinfo", "https://@docs.example.org/", R.USERINFO),
    ("backslash before at", "https://evil.com\\@docs.example.org", R.BACKSLASH),
    ("percent-encoded at", "https://docs.example.org%40evil.com", R.USERINFO),
    ("double-encoded at", "https://docs.example.org%2540evil.com/", R.USERINFO),
    ("full-width at", "https://docs.example.org\uff20evil.com/", R.USERINFO),
    ("small commercial at", "https://docs.example.org\ufe6bevil.com/", R.USERINFO),
    ("port then at", "https://docs.example.org:443@evil.com/", R.USERINFO),
    # -- IP literals in every notation
    ("dotted IPv4", "https://127.0.0.1/", R.IP_LITERAL),
    ("integer IPv4", "https://2130706433/", R.IP_LITERAL),
    ("hex IPv4", "https://0x7f000001/", R.IP_LITERAL),
    ("dotted hex IPv4", "https://0x7f.0.0.1/", R.IP_LITERAL),
    ("octal IPv4", "https://0177.0.0.1/", R.IP_LITERAL),
    ("short IPv4", "https://127.1/", R.IP_LITERAL),
    ("cloud metadata", "https://169.254.169.254/latest/meta-data/", R.IP_LITERAL),
    ("full-width digits", "https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", R.IP_LITERAL),
    ("name ending in a number", "https://docs.example.org.127.0.0.1/", R.IP_LITERAL),
    ("IPv4 with allowed port", "https://10.0.0.1:443/", R.IP_LITERAL),
    ("IPv6 loopback", "https://[::1]/", R.IP_LITERAL),
    ("IPv6 with port", "https://[::1]:443/", R.IP_LITERAL),
    ("IPv4-mapped IPv6", "https://[::ffff:127.0.0.1]/", R.IP_LITERAL),
    ("IPv6 zone id", "https://[fe80::1%25eth0]/", R.IP_LITERAL),
    ("IPvFuture", "https://[v1.fe80::a+en1]/", R.IP_LITERAL),
    ("unbracketed IPv6", "https://::1/", R.IP_LITERAL),
    # -- localhost, single labels and internal names
    ("localhost", "https://localhost/", R.LOCALHOST),
    ("LOCALHOST with port", "https://LOCALHOST:443/", R.LOCALHOST),
    ("subdomain of localhost", "https://docs.localhost/", R.LOCALHOST),
    ("single label", "https://intranet/", R.SINGLE_LABEL),
    ("single label docs", "https://docs/x", R.SINGLE_LABEL),
    (".local", "https://docs.local/", R.INTERNAL_NAME),
    (".internal", "https://wiki.internal/", R.INTERNAL_NAME),
    (".home.arpa", "https://nas.home.arpa/", R.INTERNAL_NAME),
    (".lan", "https://router.lan/", R.INTERNAL_NAME),
    (".corp", "https://git.corp/", R.INTERNAL_NAME),
    (".intranet", "https://hr.intranet/", R.INTERNAL_NAME),
    (".localdomain", "https://host.localdomain/", R.INTERNAL_NAME),
    (".test", "https://docs.test/", R.INTERNAL_NAME),
    (".invalid", "https://docs.invalid/", R.INTERNAL_NAME),
    (".example as top-level domain", "https://docs.example/", R.INTERNAL_NAME),
    (".onion", "https://docs.onion/", R.INTERNAL_NAME),
    # -- hosts not on the allowlist
    ("unrelated host", "https://evil.com/", R.HOST_NOT_ALLOWED),
    ("wildcard suffix alone", "https://python.org/", R.HOST_NOT_ALLOWED),
    ("suffix without a dot", "https://evilpython.org/", R.HOST_NOT_ALLOWED),
    ("allowed host as a subdomain", "https://docs.example.org.evil.com/", R.HOST_NOT_ALLOWED),
    ("wildcard suffix as a subdomain", "https://python.org.evil.com/", R.HOST_NOT_ALLOWED),
    ("parent of an exact host", "https://example.org/", R.HOST_NOT_ALLOWED),
    ("child of an exact host", "https://www.docs.example.org/", R.HOST_NOT_ALLOWED),
    ("allowed host in the path", "https://evil.com/docs.example.org", R.HOST_NOT_ALLOWED),
    ("allowed host in the fragment", "https://evil.com#@docs.example.org", R.HOST_NOT_ALLOWED),
    ("allowed host in the query", "https://evil.com?docs.example.org", R.HOST_NOT_ALLOWED),
    # -- homographs and other internationalised names
    ("Cyrillic o", f"https://d{CYR_O}cs.example.org/", R.MIXED_SCRIPT),
    ("Greek omicron", f"https://d{GREEK_O}cs.example.org/", R.MIXED_SCRIPT),
    ("Cyrillic in the wildcard suffix", f"https://docs.pyth{CYR_O}n.org/", R.MIXED_SCRIPT),
    ("Cyrillic under the wildcard", f"https://d{CYR_O}cs.python.org/", R.MIXED_SCRIPT),
    ("punycode homograph", "https://xn--dcs-sed.example.org/", R.MIXED_SCRIPT),
    ("punycode homograph upper case", "https://XN--DCS-SED.example.org/", R.MIXED_SCRIPT),
    (
        "whole-script Cyrillic look-alike",
        "https://\u0455\u0441\u043e\u0440\u0435.python.org/",
        R.CONFUSABLE,
    ),
    ("punycode whole-script look-alike", "https://xn--e1argc3h.python.org/", R.CONFUSABLE),
    ("digit zero for o", "https://d0cs.example.org/", R.CONFUSABLE),
    ("digit one for l", "https://docs.examp1e.org/", R.CONFUSABLE),
    ("look-alike of the wildcard suffix", "https://pyth0n.org/", R.CONFUSABLE),
    ("under a look-alike suffix", "https://docs.pyth0n.org/", R.CONFUSABLE),
    ("invalid punycode", "https://xn--zz.python.org/", R.INVALID_IDN),
    ("punycode symbol", "https://xn--ls8h.python.org/", R.INVALID_IDN),
    ("punycode of upper case", "https://xn--b-5da.python.org/", R.INVALID_IDN),
    ("punycode hiding a zero-width joiner", "https://xn--ab-n1t.python.org/", R.INVALID_IDN),
    ("label opening with a combining mark", "https://\u0301docs.python.org/", R.INVALID_IDN),
    ("label ending in a hyphen", "https://xn--docs-.python.org/", R.MALFORMED),
    ("sharp s deviation", "https://stra\u00dfe.python.org/", R.INVALID_IDN),
    (
        "final sigma deviation",
        "https://\u03c3\u03bf\u03c6\u03b9\u03b1\u03c2.python.org/",
        R.INVALID_IDN,
    ),
    ("bidi-invalid label", "https://\u05d0a\u05d0.python.org/", R.INVALID_IDN),
    ("full-width solidus", "https://a\uff0fb.python.org/", R.MALFORMED),
    ("full-width colon port", "https://docs.example.org\uff1a8443/", R.BAD_PORT),
    # -- controls, whitespace and invisible characters, raw
    ("CRLF injection", "https://docs.example.org/\r\nSet-Cookie: a=b", R.CONTROL_OR_SPACE),
    ("newline at the end", "https://docs.example.org/\n", R.CONTROL_OR_SPACE),
    ("tab", "https://docs.example.org/a\tb", R.CONTROL_OR_SPACE),
    ("tab in the scheme", "java\tscript:alert(1)", R.CONTROL_OR_SPACE),
    ("space", "https://docs.example.org/a b", R.CONTROL_OR_SPACE),
    ("leading space", " https://docs.example.org/", R.CONTROL_OR_SPACE),
    ("NUL", "https://docs.example.org/\x00", R.CONTROL_OR_SPACE),
    ("DEL", "https://docs.example.org/\x7f", R.CONTROL_OR_SPACE),
    ("right-to-left override", "https://docs.example.org/\u202egpj.exe", R.CONTROL_OR_SPACE),
    ("RLO in the host", "https://docs.python.org\u202e.evil.com/", R.CONTROL_OR_SPACE),
    ("zero-width joiner in the host", "https://docs\u200d.example.org/", R.CONTROL_OR_SPACE),
    ("zero-width space", "https://docs.example.org/\u200b", R.CONTROL_OR_SPACE),
    ("byte order mark", "\ufeffhttps://docs.example.org/", R.CONTROL_OR_SPACE),
    ("no-break space", "https://docs.example.org/a\u00a0b", R.CONTROL_OR_SPACE),
    ("line separator", "https://docs.example.org/\u2028", R.CONTROL_OR_SPACE),
    ("Hangul filler in the host", "https://docs\u3164.python.org/", R.CONTROL_OR_SPACE),
    ("combining grapheme joiner", "https://do\u034fcs.example.org/", R.CONTROL_OR_SPACE),
    ("lone surrogate", "https://docs.example.org/\ud800", R.CONTROL_OR_SPACE),
    # -- the same, percent-encoded
    ("encoded CRLF", "https://docs.example.org/%0d%0aSet-Cookie:a=b", R.ENCODED_CONTROL),
    ("encoded tab", "https://docs.example.org/%09", R.ENCODED_CONTROL),
    ("encoded NUL", "https://docs.example.org/%00", R.ENCODED_CONTROL),
    ("encoded backslash", "https://docs.example.org/%5c..%5cwin.ini", R.ENCODED_CONTROL),
    ("encoded space", "https://docs.example.org/a%20b", R.ENCODED_CONTROL),
    ("encoded RLO", "https://docs.example.org/%E2%80%AEgpj.exe", R.ENCODED_CONTROL),
    ("encoded no-break space", "https://docs.example.org/%C2%A0", R.ENCODED_CONTROL),
    ("double-encoded CRLF", "https://docs.example.org/%250d%250a", R.ENCODED_CONTROL),
    ("encoded newline in the query", "https://docs.example.org/?q=%0A", R.ENCODED_CONTROL),
    ("encoded NUL in the fragment", "https://docs.example.org/#%00", R.ENCODED_CONTROL),
    ("encoded control in the host", "https://docs.example.org%0d/", R.ENCODED_CONTROL),
    ("encoded dot in the host", "https://docs%2eexample.org/", R.MALFORMED),
    ("deeply nested encoding", "https://docs.example.org/%2525252525", R.ENCODED_CONTROL),
    # -- backslashes and markup breakers
    ("backslashes for slashes", "https:\\\\docs.example.org\\", R.BACKSLASH),
    ("backslash in the path", "https://docs.example.org/a\\b", R.BACKSLASH),
    ("quote breaking an attribute", 'https://docs.example.org/"onmouseover="x', R.UNSAFE_CHARACTER),
    ("angle brackets", "https://docs.example.org/<script>", R.UNSAFE_CHARACTER),
    ("backtick", "https://docs.example.org/`x`", R.UNSAFE_CHARACTER),
    # -- ports
    ("port 8443", "https://docs.example.org:8443/", R.BAD_PORT),
    ("port 80", "https://docs.example.org:80/", R.BAD_PORT),
    ("port 0", "https://docs.example.org:0/", R.BAD_PORT),
    ("empty port", "https://docs.example.org:/", R.BAD_PORT),
    ("named port", "https://docs.example.org:https/", R.BAD_PORT),
    ("port with a leading zero", "https://docs.example.org:0443/", R.BAD_PORT),
    ("two ports", "https://docs.example.org:443:443/", R.BAD_PORT),
    ("signed port", "https://docs.example.org:+443/", R.BAD_PORT),
    # -- host syntax
    ("trailing dot", "https://docs.example.org./", R.TRAILING_DOT),
    ("ideographic trailing dot", "https://docs.example.org\u3002/", R.TRAILING_DOT),
    ("two dots", "https://docs..example.org/", R.EMPTY_LABEL),
    ("leading dot", "https://.docs.example.org/", R.EMPTY_LABEL),
    ("just a dot", "https://./", R.EMPTY_LABEL),
    ("underscore", "https://docs_x.python.org/", R.MALFORMED),
    ("leading hyphen", "https://-docs.python.org/", R.MALFORMED),
    ("label over 63 characters", f"https://{'a' * 64}.python.org/", R.MALFORMED),
    ("stray bracket", "https://docs.example.org]/", R.MALFORMED),
    # -- length
    ("overlong", "https://docs.example.org/" + "a" * 2048, R.TOO_LONG),
]

# (case id, url, normalised form)
GOOD: list[tuple[str, str, str]] = [
    ("bare host", "https://docs.example.org", "https://docs.example.org"),
    ("root", "https://docs.example.org/", "https://docs.example.org/"),
    (
        "path",
        "https://docs.example.org/guide/intro.html",
        "https://docs.example.org/guide/intro.html",
    ),
    ("upper-case scheme", "HTTPS://docs.example.org/x", "https://docs.example.org/x"),
    ("mixed-case scheme", "hTtPs://docs.example.org/x", "https://docs.example.org/x"),
    ("upper-case host", "https://DOCS.EXAMPLE.ORG/Path", "https://docs.example.org/Path"),
    ("port 443 dropped", "https://docs.example.org:443/x", "https://docs.example.org/x"),
    (
        "query and fragment",
        "https://docs.example.org/search?q=a+b&lang=en#section-2",
        "https://docs.example.org/search?q=a+b&lang=en#section-2",
    ),
    ("query without path", "https://docs.example.org?q=1", "https://docs.example.org?q=1"),
    ("encoded slash", "https://docs.example.org/a%2Fb", "https://docs.example.org/a%2Fb"),
    ("encoded percent", "https://docs.example.org/100%25", "https://docs.example.org/100%25"),
    (
        "encoded UTF-8 in the path",
        "https://docs.example.org/caf%C3%A9",
        "https://docs.example.org/caf%C3%A9",
    ),
    ("raw UTF-8 in the path", "https://docs.example.org/café", "https://docs.example.org/café"),
    (
        "at sign in the fragment",
        "https://docs.example.org#@evil.com",
        "https://docs.example.org#@evil.com",
    ),
    (
        "URL in the query",
        "https://docs.example.org/?next=https://evil.com/",
        "https://docs.example.org/?next=https://evil.com/",
    ),
    ("wildcard subdomain", "https://docs.python.org/3/", "https://docs.python.org/3/"),
    (
        "another wildcard subdomain",
        "https://peps.python.org/pep-0008/",
        "https://peps.python.org/pep-0008/",
    ),
    ("deep wildcard subdomain", "https://a.b.docs.python.org/", "https://a.b.docs.python.org/"),
    ("upper-case wildcard subdomain", "https://Docs.Python.ORG/", "https://docs.python.org/"),
    ("digits in a label", "https://docs3.python.org/", "https://docs3.python.org/"),
    ("ideographic full stops", "https://docs\u3002example\u3002org/", "https://docs.example.org/"),
    ("full-width full stops", "https://docs\uff0eexample\uff0eorg/", "https://docs.example.org/"),
    (
        "circled letters",
        "https://\u24d3\u24de\u24d2\u24e2.example.org/",
        "https://docs.example.org/",
    ),
    (
        "full-width letters",
        "https://\uff44\uff4f\uff43\uff53.example.org/",
        "https://docs.example.org/",
    ),
    ("Cyrillic label", "https://пример.python.org/", "https://xn--e1afmkfd.python.org/"),
    (
        "Cyrillic label as punycode",
        "https://xn--e1afmkfd.python.org/",
        "https://xn--e1afmkfd.python.org/",
    ),
    ("Latin with diaeresis", "https://bücher.python.org/", "https://xn--bcher-kva.python.org/"),
    (
        "upper-case Latin with diaeresis",
        "https://BÜCHER.python.org/",
        "https://xn--bcher-kva.python.org/",
    ),
    ("Han label", "https://日本語.python.org/", "https://xn--wgv71a119e.python.org/"),
    (
        "Katakana and Han in one label",
        "https://ドキュメント日本.python.org/",
        "https://xn--nckucb1hta9ft758b0ec.python.org/",
    ),
    (
        "apostrophe in the path",
        "https://docs.example.org/o'reilly",
        "https://docs.example.org/o'reilly",
    ),
]


def test_the_hostile_table_is_large_enough() -> None:
    assert len(HOSTILE) >= 60
    assert len({url for _, url, _ in HOSTILE}) == len(HOSTILE)


def test_every_refusal_code_is_reached() -> None:
    assert {reason for _, _, reason in HOSTILE} == set(LinkRefusal)


@pytest.mark.parametrize(
    ("url", "reason"), [(u, r) for _, u, r in HOSTILE], ids=[c for c, _, _ in HOSTILE]
)
def test_hostile_urls_are_refused(url: str, reason: LinkRefusal) -> None:
    assert POLICY.check(url) == reason
    assert POLICY.evaluate(url) == reason
    with pytest.raises(InvalidValue, match=str(reason)):
        POLICY.normalise(url)


@pytest.mark.parametrize(
    ("url", "normalised"), [(u, n) for _, u, n in GOOD], ids=[c for c, _, _ in GOOD]
)
def test_good_urls_pass_in_normal_form(url: str, normalised: str) -> None:
    assert POLICY.check(url) is None
    assert POLICY.normalise(url) == normalised
    verdict = POLICY.evaluate(url)
    assert isinstance(verdict, Link)
    assert verdict.url == normalised
    assert verdict.host == urlsplit(normalised).hostname
    # the form that is stored is checked again at render time, and passes unchanged
    assert POLICY.normalise(normalised) == normalised


def test_a_wildcard_matches_its_suffix_only_when_that_is_listed_too() -> None:
    both = LinkPolicy(("python.org", "*.python.org"))
    assert both.check("https://python.org/") is None
    assert both.check("https://docs.python.org/") is None
    assert both.check("https://evilpython.org/") == R.HOST_NOT_ALLOWED


def test_an_empty_allowlist_renders_no_links() -> None:
    assert LinkPolicy.parse("").check("https://docs.example.org/") == R.HOST_NOT_ALLOWED
    assert LinkPolicy(()).check("https://docs.example.org/") == R.HOST_NOT_ALLOWED


def test_rn_reads_as_m() -> None:
    policy = LinkPolicy(("docs.mozilla.org", "*.mozilla.org"))
    assert policy.check("https://docs.rnozilla.org/") == R.CONFUSABLE
    assert policy.check("https://docs.mozilla.org/") is None
    assert policy.check("https://developer.mozilla.org/") is None


def test_an_exact_entry_is_never_its_own_look_alike() -> None:
    policy = LinkPolicy(("d0cs.example.org", "docs.example.org"))
    assert policy.check("https://d0cs.example.org/") is None
    assert policy.check("https://docs.example.org/") is None


def test_length_counts_the_raw_and_the_normalised_url() -> None:
    url = "https://docs.example.org/" + "a" * 10
    assert LinkPolicy(("docs.example.org",), max_length=len(url)).check(url) is None
    assert LinkPolicy(("docs.example.org",), max_length=len(url) - 1).check(url) == R.TOO_LONG
    # punycode is longer than the Unicode it encodes
    idn = "https://пример.python.org/"
    policy = LinkPolicy(("*.python.org",), max_length=len(idn) + 2)
    assert policy.check(idn) == R.TOO_LONG
    assert policy.check("https://xn--e1afmkfd.python.org/") == R.TOO_LONG


def test_parse_normalises_entries() -> None:
    policy = LinkPolicy.parse(
        " Docs.Example.ORG , *.Python.org,,bücher.example.org,docs.example.org,"
    )
    assert policy.allowed_hosts == ("docs.example.org", "*.python.org", "xn--bcher-kva.example.org")
    assert policy.max_length == 2048
    assert LinkPolicy.parse("docs.example.org", max_length=100).max_length == 100


def test_construction_normalises_entries_too() -> None:
    assert LinkPolicy(("DOCS.example.org",)).allowed_hosts == ("docs.example.org",)
    assert LinkPolicy(("docs\u3002example\u3002org",)).allowed_hosts == ("docs.example.org",)


@pytest.mark.parametrize(
    "entry",
    [
        "https://docs.example.org",
        "docs.example.org:443",
        "docs.example.org/path",
        "user@docs.example.org",
        "*",
        "*.",
        "*.org",
        "a.*.example.org",
        "**.example.org",
        "127.0.0.1",
        "[::1]",
        "localhost",
        "docs.localhost",
        "intranet",
        "wiki.corp",
        "docs.example.org.",
        "docs..example.org",
        f"d{CYR_O}cs.example.org",
        "xn--zz.example.org",
        "docs_x.example.org",
        "docs example.org",
    ],
)
def test_parse_refuses_entries_that_can_never_match(entry: str) -> None:
    with pytest.raises(InvalidValue):
        LinkPolicy.parse(f"docs.example.org,{entry}")


def test_max_length_must_be_positive() -> None:
    with pytest.raises(InvalidValue):
        LinkPolicy(("docs.example.org",), max_length=0)


def test_refusal_codes_are_stable() -> None:
    assert R.NOT_HTTPS == "not_https"
    assert R.IP_LITERAL == "ip_literal"
    assert R.HOST_NOT_ALLOWED == "host_not_allowed"
    assert all(code.value == code.name.lower() for code in LinkRefusal)


# -- properties

_ALLOWED_SUFFIX = ".python.org"


def _on_allowlist(host: str) -> bool:
    return host == "docs.example.org" or host.endswith(_ALLOWED_SUFFIX)


def _clean(url: str) -> bool:
    for text in (url, unquote(url, errors="replace")):
        for char in text:
            if char.isspace() or char == "\\" or unicodedata.category(char)[0] in "CZ":
                return False
    return True


_LABELS = st.sampled_from(
    [
        "docs",
        "DOCS",
        "d\u043ecs",
        "d0cs",
        "xn--dcs-sed",
        "xn--zz",
        "python",
        "pyth\u043en",
        "example",
        "org",
        "evil",
        "com",
        "localhost",
        "local",
        "127",
        "0x7f",
        "1",
        "",
        "пример",
        "\uff44\uff4f\uff43\uff53",
        "a\u200db",
        "st\u00dfe",
        "x",
    ]
)
_DOTS = st.sampled_from(
    [".", ".", ".", "\u3002", "\uff0e", "..", "@", ":", "%2e", "%40", "/", "\\"]
)


@st.composite
def _hostile_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["https", "HTTPS", "http", "javascript", "", "https:"]))
    separator = draw(st.sampled_from(["://", "://", ":", ":///", "//", ":\\\\"]))
    labels = draw(st.lists(_LABELS, min_size=1, max_size=5))
    dots = draw(st.lists(_DOTS, min_size=len(labels), max_size=len(labels)))
    host = "".join(label + dot for label, dot in zip(labels, dots, strict=True))[:-1]
    suffix = draw(st.sampled_from(["", ".python.org", ".example.org", ".org"]))
    port = draw(st.sampled_from(["", "", ":443", ":8443", ":", ":0443"]))
    tail = draw(st.text(max_size=20))
    return f"{scheme}{separator}{host}{suffix}{port}/{tail}"


@given(st.text())
@settings(max_examples=400)
def test_check_never_raises_on_arbitrary_text(url: str) -> None:
    verdict = POLICY.evaluate(url)
    assert isinstance(verdict, Link | LinkRefusal)
    if isinstance(verdict, Link):
        assert _on_allowlist(verdict.host)


@given(_hostile_urls())
@settings(max_examples=600)
def test_whatever_is_accepted_points_at_the_allowlist_and_is_clean(url: str) -> None:
    verdict = POLICY.evaluate(url)
    if isinstance(verdict, LinkRefusal):
        assert POLICY.check(url) == verdict
        return
    parts = urlsplit(verdict.url)
    assert parts.scheme == "https"
    assert parts.hostname == verdict.host
    assert parts.port is None
    assert parts.username is None
    assert parts.password is None
    assert _on_allowlist(verdict.host)
    assert verdict.host.isascii()
    assert verdict.host == verdict.host.lower()
    assert _clean(verdict.url)
    assert POLICY.evaluate(verdict.url) == verdict


@given(st.from_regex(r"https://xn--[a-z0-9-]{1,20}\.python\.org/", fullmatch=True))
@settings(max_examples=300)
def test_arbitrary_punycode_never_raises(url: str) -> None:
    verdict = POLICY.evaluate(url)
    if isinstance(verdict, Link):
        assert verdict.host.endswith(_ALLOWED_SUFFIX)
        assert POLICY.evaluate(verdict.url) == verdict
