"""Units cut at ingest and stored: read back exactly as cutting gives them, used by the
generator, and never used when they are not the passage's own or not of this form."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.adapters.generators.extractive.stored import (
    FORMAT,
    quoted_from,
    read_units,
    stored_units,
)
from citadel.adapters.generators.extractive.units import quotable_units
from citadel.domain.answer import GenerationRequest
from citadel.domain.manifest import PromptEvidence
from tests.unit.test_extractive_generator import passages

PASSAGE = (
    "Missing values are marked NA in the R language. The function is.na(x) gives a logical"
    " vector of the same size as its argument. Arithmetic on NA gives NA in turn.\n\n"
    "> is.na(z)\n"
)


@settings(max_examples=300, deadline=None)
@given(passage=st.one_of(passages(), st.text(max_size=300)))
def test_stored_units_read_back_as_cutting_gives_them(passage: str) -> None:
    cut = tuple(quotable_units(passage))
    read = read_units(stored_units(passage), passage)
    assert read == cut
    # Field by field, the terms included (a Unit compares them too, but say it).
    assert read is not None and [u.terms for u in read] == [u.terms for u in cut]


def request(
    passage: str, units: str | None, question: str = "How are missing values tested for?"
) -> GenerationRequest:
    evidence = PromptEvidence(
        ref="E1", passage=passage, title="R", author="", chapter="", section="", pages="",
        units=units,
    )  # fmt: skip
    return GenerationRequest(question=question, evidence=(evidence,), max_output_tokens=512)


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["words", "hashing"])
def test_the_generator_answers_the_same_from_stored_units(embedder: HashingEmbedder | None) -> None:
    generator = ExtractiveGenerator(embedder=embedder)
    cut = asyncio.run(generator.generate(request(PASSAGE, None)))
    stored = asyncio.run(generator.generate(request(PASSAGE, stored_units(PASSAGE))))
    assert stored.payload == cut.payload and cut.payload["segments"]  # type: ignore[index]


def test_the_generator_reads_the_stored_units_rather_than_cutting() -> None:
    # A stored form of the passage holding only its last sentence: only it is quoted,
    # though cutting would find the one that answers (the first).
    question = "How are missing values marked, and what does arithmetic on them give?"
    cut = ExtractiveGenerator().segments(request(PASSAGE, None, question))
    assert cut[0]["text"] == next(u.text for u in quotable_units(PASSAGE))
    form = json.loads(stored_units(PASSAGE))
    keep = [i for i, text in enumerate(form["text"]) if text.startswith("Arithmetic")]
    for name in ("start", "end", "text", "code", "terms", "wording"):
        form[name] = [form[name][i] for i in keep]
    segments = ExtractiveGenerator().segments(request(PASSAGE, json.dumps(form), question))
    assert [s["text"] for s in segments] == form["text"]
    assert form["text"][0] not in [s["text"] for s in cut]


def altered(change: object) -> str:
    form = json.loads(stored_units(PASSAGE))
    change(form)  # type: ignore[operator]
    return json.dumps(form)


def unit_field(name: str, value: object) -> object:
    def change(form: dict[str, list[object]]) -> None:
        form[name][0] = value

    return change


@pytest.mark.parametrize(
    "stored",
    [
        None,
        "",
        "not json",
        "[]",
        '"units/1"',
        "{}",
        altered(lambda f: f.update(format="units/0")),
        altered(lambda f: f.pop("sha256")),
        altered(lambda f: f.update(start=3)),
        altered(lambda f: f.pop("wording")),
        altered(lambda f: f["terms"].pop()),  # a column shorter than the others
        altered(unit_field("start", "0")),
        altered(unit_field("start", True)),
        altered(unit_field("start", 0.0)),
        altered(unit_field("start", -1)),
        altered(unit_field("end", len(PASSAGE) + 1)),
        altered(unit_field("end", 0)),  # not after its start
        altered(unit_field("code", 0)),
        altered(unit_field("text", None)),
        altered(unit_field("terms", ["na"])),
        altered(unit_field("wording", 7)),
        '{"format":"units/1","a":' + "[" * 100_000 + "]" * 100_000 + "}",  # too deep
        altered(lambda f: f.update(pad=" " * 16 * len(PASSAGE) + " " * 4096)),  # too long
    ],
)
def test_a_stored_form_that_is_not_of_this_shape_is_not_read(stored: str | None) -> None:
    assert read_units(stored, PASSAGE) is None


@pytest.mark.parametrize(
    "edit",
    [
        lambda texts: texts.__setitem__(0, texts[0].replace("marked", "never")),
        lambda texts: texts.__setitem__(0, texts[0] + " Not."),
        lambda texts: texts.__setitem__(-1, "> rm(z)"),  # the code unit
        lambda texts: texts.reverse(),
    ],
)
def test_units_that_do_not_say_their_passages_words_are_never_quoted(edit: object) -> None:
    # A row edited by hand, the sha256 kept: read, but the generator checks each unit
    # it is about to quote against its span, and cuts the passage afresh.
    form = json.loads(stored_units(PASSAGE))
    edit(form["text"])  # type: ignore[operator]
    units = read_units(json.dumps(form), PASSAGE)
    assert units is not None and not all(quoted_from(u, PASSAGE) for u in units)
    assert all(quoted_from(u, PASSAGE) for u in quotable_units(PASSAGE))
    for question in ("How are missing values marked?", "What does is.na give for z?"):
        generator = ExtractiveGenerator()
        cut = generator.segments(request(PASSAGE, None, question))
        assert generator.segments(request(PASSAGE, json.dumps(form), question)) == cut
        assert cut


def test_units_cut_from_another_text_are_not_read() -> None:
    # The passage as PostgreSQL stores a NUL (U+FFFD), or a later edit: one character.
    other = PASSAGE.replace("the R language", "the S language")
    assert read_units(stored_units(other), PASSAGE) is None
    assert read_units(stored_units(PASSAGE), PASSAGE) is not None


def test_the_form_names_its_format() -> None:
    assert json.loads(stored_units(PASSAGE))["format"] == FORMAT


# -- the format follows the cutting ----------------------------------------------------

PIECES = [
    "A retry budget bounds the retry attempts a client may make.",
    "Backoff spaces the attempts so that a service can recover (see Section 2.1).",
    'The "reflog" keeps every previous value of each branch.',
    "e.g. a worker thread, i.e. one of many, is started once.",
    "It is very fast.",
    "Retries are bounded by budgets.",
    "Use the index, for example:",
    "Missing values are marked NA in R and is.na(x) finds them.",
    "which continues a sentence from before the cut",
    "Les données manquantes sont notées « NA » et comptées à part.",
    "Straße, İstanbul and Σ-algebras are folded… then compared.",
    "\n$ git log master@{1}\n",
    "\n> x[is.na(x)] <- 0\n",
    "\npython -m venv tutorial-env\n",
    "\n>>> for i in range(3):\n...     print(i)\n",
    "\n    pool = Pool(4)\n    pool.start()\n",
    "\nSELECT * FROM weather WHERE city = 'Hayward';\n",
    # Code blocks at the bounds of what is quoted whole (MAX_BLOCK_LINES 6, 400 chars):
    # 6 and 7 short lines; 4 lines of 340 characters in all, 5 lines of 500.
    "\n" + "".join(f"x{i} = f({i})\n" for i in range(6)),
    "\n" + "".join(f"y{i} = g({i})\n" for i in range(7)),
    "\n" + "\n".join(f"value_{i} = compute({'a' * 60}, {i})".ljust(84, "0") for i in range(4)),
    "\n" + "\n".join(f"result_{i} = transform({'b' * 70}, {i})".ljust(99, "1") for i in range(5)),
]
CUTTING_DIGEST = "57d33a64796513eef57f4569249d165fa572a0ff5ac1106bf1f4e2855780cac4"


def corpus() -> list[str]:
    """200 fixed passages: the pieces above in a seeded order, cut at seeded places."""
    rng = random.Random(14)
    out = []
    for _ in range(200):
        text = "".join(rng.choice(PIECES) + rng.choice([" ", "\n", "\n\n"]) for _ in range(6))
        start = rng.randrange(len(text) // 3)
        out.append(text[start : rng.randrange(start + 1, len(text) + 1)])
    return out


def test_a_change_to_the_cutting_comes_with_a_new_format() -> None:
    # Stored forms of FORMAT are read as they are: if what quotable_units gives for
    # these passages changed, forms stored before would serve the old units. Bump
    # FORMAT in stored.py, then pin the new digest and format here together.
    units = [
        [[u.start, u.end, u.text, u.code, sorted(u.terms), u.wording] for u in quotable_units(p)]
        for p in corpus()
    ]
    digest = hashlib.sha256(json.dumps(units, ensure_ascii=False).encode()).hexdigest()
    assert (FORMAT, digest) == ("units/1", CUTTING_DIGEST)
