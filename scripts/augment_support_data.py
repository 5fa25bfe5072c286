"""Perturb written SUPPORT sentences into CONTRADICT sentences (augmentation).

Usage:
    augment_support_data.py --chunks DIR IN... --out FILE --seed 7

Each SUPPORT sentence of the input files gets at most two perturbations,
chosen deterministically from those that apply:

- ``number``: a number that also occurs in the passage is changed to one that
  does not occur there;
- ``unit``: a unit word is swapped for another unit of the same dimension;
- ``identifier``: a function, option or command name that occurs in the
  passage is swapped for another one from the same book that the passage
  does not mention;
- ``negation_insert`` / ``negation_remove``: "not" is added after the first
  auxiliary of the main clause, or removed from a sentence with exactly one
  simple negation;
- ``antonym``: a word from a small antonym table is replaced by its opposite.

Output rows have the fields of the written files, ``label`` CONTRADICT,
``origin`` augmented and ``kind`` the perturbation name.  The same inputs and
seed always give the same output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from pathlib import Path

NEGATION = re.compile(
    r"\b(not|no|never|none|nothing|nobody|cannot|neither|nor|without)\b|n't\b",
    re.IGNORECASE,
)

UNITS = [
    ("bytes", "kilobytes"),
    ("KB", "MB"),
    ("MB", "GB"),
    ("GB", "TB"),
    ("milliseconds", "seconds"),
    ("seconds", "minutes"),
    ("minutes", "hours"),
    ("hours", "days"),
    ("days", "weeks"),
    ("bits", "bytes"),
    ("digits", "bits"),
    ("decimals", "bits"),
    ("inches", "centimetres"),
    ("feet", "metres"),
    ("pages", "bytes"),
]

ANTONYMS = [
    ("increase", "decrease"),
    ("increases", "decreases"),
    ("increasing", "decreasing"),
    ("larger", "smaller"),
    ("largest", "smallest"),
    ("longer", "shorter"),
    ("faster", "slower"),
    ("before", "after"),
    ("first", "last"),
    ("earliest", "latest"),
    ("older", "newer"),
    ("oldest", "newest"),
    ("minimum", "maximum"),
    ("ascending", "descending"),
    ("always", "never"),
    ("enabled", "disabled"),
    ("true", "false"),
    ("easy", "difficult"),
    ("easier", "harder"),
    ("efficient", "inefficient"),
    ("safe", "unsafe"),
    ("exact", "inexact"),
    ("exactly", "approximately"),
    ("upper", "lower"),
    ("visible", "invisible"),
    ("permanently", "temporarily"),
    ("automatically", "manually"),
    ("allowed", "forbidden"),
    ("required", "optional"),
    ("sorted", "unsorted"),
    ("success", "failure"),
    ("succeeds", "fails"),
]

ORDINALS = {"first", "last", "earliest", "latest"}

AUXILIARIES = [
    ("cannot", "can"),
    ("can't", "can"),
    ("isn't", "is"),
    ("aren't", "are"),
    ("doesn't", "does"),
    ("don't", "do"),
    ("won't", "will"),
    ("is not", "is"),
    ("are not", "are"),
    ("was not", "was"),
    ("were not", "were"),
    ("does not", "does"),
    ("do not", "do"),
    ("will not", "will"),
    ("must not", "must"),
    ("should not", "should"),
    ("has not", "has"),
    ("have not", "have"),
]

INSERT_AUX = ["is", "are", "can", "must", "should", "will", "was", "were"]
SUBORDINATE = re.compile(
    r"^(if|when|whenever|unless|because|although|though|since|after|before|once|"
    r"while|until|as|for|with|without)\b",
    re.IGNORECASE,
)
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*\w)")
IDENT = re.compile(
    r"(?<![\w.-])("
    r"--?[a-zA-Z][\w-]+"  # options and flags
    r"|[A-Za-z_][\w.]*\(\)"  # name()
    r"|[A-Za-z_]\w*(?:\.\w+)*(?=\()"  # name( ... )
    r"|[a-z]+_[a-z0-9_]+"  # snake_case settings and functions
    r")"
)


def load_chunks(directory: Path, book: str, cache: dict) -> dict:
    if book not in cache:
        table = {}
        with (directory / f"{book}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                table[row["chunk_id"]] = row["text"]
        cache[book] = table
    return cache[book]


def vocabulary(chunks: dict) -> dict[str, list[str]]:
    """Identifiers of one book, grouped by shape so swaps stay plausible."""
    groups: dict[str, set[str]] = {"option": set(), "call": set(), "snake": set()}
    for text in chunks.values():
        for m in IDENT.finditer(text):
            groups[shape(m.group(1))].add(m.group(1).rstrip("()"))
    return {k: sorted(v) for k, v in groups.items()}


def shape(token: str) -> str:
    if token.startswith("-"):
        return "option"
    if "(" in token or token.endswith("()"):
        return "call"
    return "snake"


def keep_case(template: str, word: str) -> str:
    return word[:1].upper() + word[1:] if template[:1].isupper() else word


BOUND = re.compile(r"(under|below|over|above|than|most|least|up to|within)\s*$", re.IGNORECASE)


def plain_value(sentence: str, m: re.Match) -> bool:
    """A number written as a value in prose, not inside code or a bound."""
    before, after = sentence[: m.start(1)], sentence[m.end(1) :]
    if before and not before.endswith(" "):
        return False
    if after and not re.match(r"[\s,.;:)]", after[0]):
        return False
    near = before[-3:] + after[:3]
    return not (re.search(r"[-+*/^=<>\[\]]", near) or BOUND.search(before))


def perturb_number(sentence, passage, rng, vocab):
    if NEGATION.search(sentence):  # "does not give 10" would become true
        return None
    numbers = [
        m for m in NUMBER.finditer(sentence) if m.group(1) in passage and plain_value(sentence, m)
    ]
    if not numbers:
        return None
    m = rng.choice(numbers)
    value = m.group(1)
    if "." in value:
        candidates = [f"{float(value) * k:g}" for k in (2, 10, 0.5)]
    else:
        n = int(value)
        candidates = [str(n * 2), str(n + 1), str(n * 10)]
        if n > 2:
            candidates += [str(n - 1), str(n // 2)]
    candidates = [c for c in candidates if c != value and c not in passage]
    if not candidates:
        return None
    return sentence[: m.start(1)] + rng.choice(candidates) + sentence[m.end(1) :]


def perturb_unit(sentence, passage, rng, vocab):
    if NEGATION.search(sentence):
        return None
    options = []
    for a, b in UNITS:
        for old, new in ((a, b), (b, a)):
            word = r"\d\s*" + re.escape(old) + r"(?![\w-])"
            if re.search(word, sentence) and new not in passage:
                options.append((old, new))
    if not options:
        return None
    old, new = rng.choice(options)
    m = re.search(r"(?<=\d)(\s*)" + re.escape(old) + r"(?![\w-])", sentence)
    number = re.search(r"[\d.,]+$", sentence[: m.start()])
    if BOUND.search(sentence[: number.start()] if number else ""):
        return None
    return sentence[: m.start()] + m.group(1) + new + sentence[m.end() :]


def perturb_identifier(sentence, passage, rng, vocab):
    if NEGATION.search(sentence):  # "list.copy() does not write" is simply true
        return None
    found = []
    for m in IDENT.finditer(sentence):
        token = m.group(1)
        bare = token.rstrip("()")
        if bare in passage and len(bare) > 2:
            found.append((m, bare))
    if not found:
        return None
    m, bare = rng.choice(found)
    pool = [
        v
        for v in vocab[shape(m.group(1))]
        if v != bare and v not in passage and v not in sentence and len(v) > 2
    ]
    if not pool:
        return None
    new = rng.choice(pool)
    start = m.start(1)
    return sentence[:start] + new + sentence[start + len(bare) :]


def perturb_negation_insert(sentence, passage, rng, vocab):
    if NEGATION.search(sentence) or SUBORDINATE.match(sentence):
        return None
    if re.search(r"\b(only|because|since)\b", sentence, re.IGNORECASE):
        return None  # "not ... only", "not slow because" have unclear scope
    head = re.split(r"[,;:]| if | when | unless | because | so that ", sentence)[0]
    best = None
    for aux in INSERT_AUX:
        m = re.search(r"\b" + aux + r"\b", head)
        if m and (best is None or m.start() < best.start()):
            best = m
    if best is None:
        return None
    aux = best.group(0)
    new = "cannot" if aux == "can" else aux + " not"
    return sentence[: best.start()] + new + sentence[best.end() :]


def perturb_negation_remove(sentence, passage, rng, vocab):
    hits = NEGATION.findall(sentence)
    if re.search(r"\b(some|only|until|unless)\b", sentence, re.IGNORECASE):
        return None  # "some X cannot" -> "some X can" is simply true
    if len(hits) != 1 or re.search(r"\bnot (only|just|necessarily|any)\b|n't any\b", sentence):
        return None
    for neg, pos in AUXILIARIES:
        pattern = re.compile(r"\b" + re.escape(neg) + r"\b", re.IGNORECASE)
        m = pattern.search(sentence)
        if m:
            return sentence[: m.start()] + keep_case(m.group(0), pos) + sentence[m.end() :]
    m = re.search(r"\bnever\b", sentence, re.IGNORECASE)
    if m:
        return sentence[: m.start()] + keep_case(m.group(0), "always") + sentence[m.end() :]
    return None


def perturb_antonym(sentence, passage, rng, vocab):
    options = []
    for a, b in ANTONYMS:
        for old, new in ((a, b), (b, a)):
            word = r"(?<![\w(.-])" + re.escape(old) + r"(?![\w(.-])"
            m = re.search(word, sentence, re.IGNORECASE)
            if not m:
                continue
            before = sentence[: m.start()]
            if old.lower() in ORDINALS and not re.search(r"\bthe\s+$", before, re.IGNORECASE):
                continue  # adverbial "first" ("it first creates") reads badly
            if re.match(r"\s+(another|all)\b", sentence[m.end() :]):
                continue  # "one after another", "after all" are idioms
            if not re.search(r"[`'\"]$", before):
                options.append((m.start(), m, new))
    if not options or NEGATION.search(sentence):
        return None
    _, m, new = min(options, key=lambda t: t[0])
    return sentence[: m.start()] + keep_case(m.group(0), new) + sentence[m.end() :]


PERTURBATIONS = {
    "number": perturb_number,
    "unit": perturb_unit,
    "identifier": perturb_identifier,
    "negation_insert": perturb_negation_insert,
    "negation_remove": perturb_negation_remove,
    "antonym": perturb_antonym,
}


def item_rng(seed: int, key: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))  # noqa: S311 - not for security


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", type=Path)
    ap.add_argument("--chunks", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--per-sentence", type=int, default=2)
    args = ap.parse_args(argv)

    cache: dict = {}
    vocabs: dict = {}
    counters: dict[str, int] = {}
    out_rows = []
    for path in args.inputs:
        with path.open(encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        for row in rows:
            if row["label"] != "SUPPORT" or row.get("origin") != "written":
                continue
            book = row["book"]
            if book not in vocabs:
                vocabs[book] = vocabulary(load_chunks(args.chunks, book, cache))
            rng = item_rng(args.seed, row["id"])
            names = list(PERTURBATIONS)
            rng.shuffle(names)
            made = 0
            for name in names:
                if made >= args.per_sentence:
                    break
                new = PERTURBATIONS[name](row["sentence"], row["passage"], rng, vocabs[book])
                if not new or new == row["sentence"] or new in row["passage"]:
                    continue
                if not 8 <= len(new.split()) <= 35:
                    continue
                counters[book] = counters.get(book, 0) + 1
                out_rows.append(
                    {
                        "id": f"{book}-a{counters[book]:05d}",
                        "book": book,
                        "chunk_id": row["chunk_id"],
                        "passage": row["passage"],
                        "sentence": new,
                        "label": "CONTRADICT",
                        "kind": name,
                        "origin": "augmented",
                    }
                )
                made += 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for row in out_rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    kinds: dict[str, int] = {}
    for row in out_rows:
        kinds[row["kind"]] = kinds.get(row["kind"], 0) + 1
    print(f"{len(out_rows)} augmented rows -> {args.out}")
    for kind, n in sorted(kinds.items()):
        print(f"  {kind:16s} {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
