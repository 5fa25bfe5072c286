"""Turn SUPPORT sentences into CONTRADICT sentences by mechanical perturbation.

Usage: augment_support_data.py --chunks DIR IN... --out FILE --seed 7

Reads written triples (JSON Lines, fields as in check_support_data.py) and, for
each SUPPORT sentence, tries a seeded, deterministic selection of perturbations:

- value: a number that also occurs in the passage is replaced by another
  number, a number word by another number word, or a unit by another unit;
- command: a function name, a long option (--flag) or a git subcommand that
  also occurs in the passage is replaced by another one of the same shape taken
  from the same book's chunks and absent from the passage;
- negation: a negation is removed ("cannot" -> "can", "does not" -> "does"),
  or, when the sentence has none, inserted after its first auxiliary verb;
- direction / before_after / quantifier: a word from a small antonym table is
  swapped for its opposite (first/last, before/after, always/never, ...).

The perturbation name is written as the row's kind, using the CONTRADICT kinds
of the written data (value, command, negation, direction, before_after,
quantifier), so that the same per-kind reports apply. At most two perturbations
of different kinds are kept per sentence. Each input row gets its own random
generator seeded from --seed and the row id, so output for a row does not change
when other rows are added. Output rows have label CONTRADICT and
origin "augmented"; ids are <book>-a00001, ... in input order.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

NUMBER_WORDS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
UNITS = [
    ("characters", "bytes"),
    ("characters", "lines"),
    ("seconds", "minutes"),
    ("inches", "centimetres"),
    ("bits", "bytes"),
    ("rows", "columns"),
]
# (word, opposite, kind); matched as whole lower-case words outside code.
ANTONYMS = [
    ("first", "last", "before_after"),
    ("before", "after", "before_after"),
    ("oldest", "newest", "before_after"),
    ("previous", "next", "before_after"),
    ("always", "never", "quantifier"),
    ("often", "rarely", "quantifier"),
    ("usually", "rarely", "quantifier"),
    ("upper", "lower", "direction"),
    ("increase", "decrease", "direction"),
    ("increases", "decreases", "direction"),
    ("more", "less", "direction"),
    ("longer", "shorter", "direction"),
    ("longest", "shortest", "direction"),
    ("larger", "smaller", "direction"),
    ("faster", "slower", "direction"),
    ("minimal", "copious", "direction"),
    ("backwards", "forwards", "direction"),
    ("local", "remote", "direction"),
    ("immutable", "mutable", "direction"),
    ("easy", "hard", "direction"),
    ("easier", "harder", "direction"),
    ("safe", "unsafe", "direction"),
    ("useful", "useless", "direction"),
    ("empty", "non-empty", "direction"),
    ("harmless", "harmful", "direction"),
    ("true", "false", "direction"),
]
REMOVE_NEGATION = [
    (r"\bcannot\b", "can"),
    (r"\bcan't\b", "can"),
    (r"\bdoesn't\b", "does"),
    (r"\bdon't\b", "do"),
    (r"\bisn't\b(?! either)", "is"),
    (r"\baren't\b", "are"),
    (r"\bwon't\b", "will"),
    (r"\bnever\b", "always"),
    (r"\b(?:is|are|was|were|do|does|did|can|could|will|would|should|must|need) not\b", None),
]
NEGATION = re.compile(
    r"\b(not|no|never|none|nothing|neither|nor|cannot|without)\b|n't\b", re.IGNORECASE
)
SUBORDINATE = re.compile(
    r"^(once|when|whenever|if|because|since|although|though|unless|while|before|after|as)\b",
    re.IGNORECASE,
)
AUXILIARY = re.compile(r"\b(is|are|was|were|can|must|will|should|does|do)\b(?! not\b)")
NUMBER = re.compile(r"(?<![\w.$@{~^-])\d+(?:\.\d+)?(?![\w.]*\w)")
FUNCTION = re.compile(r"\b([A-Za-z_][\w.]*[A-Za-z0-9_])\(")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*[a-z0-9])\b")
GIT_SUBCOMMAND = re.compile(r"\bgit[ -]([a-z][a-z-]*[a-z])\b")
SUBCOMMAND_GROUPS = {"submodule", "remote", "bisect", "stash", "notes", "worktree", "config"}
CLAUSE_WORD = re.compile(
    r"\b(unless|if|when|once|because|since|although|while|that|which|who|how|what|where|whether)\b"
)
PRO_FORM_FOLLOWERS = {"", "on", "in", "for", "with", "to", "so", "the", "a", "it", "this", "that"}
NOUN_ADJECTIVES = {"local", "remote", "upper", "lower", "top", "bottom"}
CODE_HINT = re.compile(r"[()=$<>{}\[\]/\\`]|--|\w\.\w")


def book_pools(chunk_texts: list[str]) -> dict[str, list[str]]:
    functions, flags, subcommands = set(), set(), set()
    for text in chunk_texts:
        functions.update(m for m in FUNCTION.findall(text) if len(m) >= 3)
        flags.update(FLAG.findall(text))
        subcommands.update(re.findall(r"\bgit-([a-z][a-z-]*[a-z])\(1\)", text))
        subcommands.update(re.findall(r"\$ git ([a-z][a-z-]*[a-z])\b", text))
    return {
        "function": sorted(functions),
        "flag": sorted(flags),
        "subcommand": sorted(subcommands),
    }


def replace_at(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def match_case(word: str, new: str) -> str:
    return new[:1].upper() + new[1:] if word[:1].isupper() else new


def perturb_value(sentence: str, passage: str, rng: random.Random) -> str | None:
    options = []
    for m in NUMBER.finditer(sentence):
        example = re.search(r"(such as|e\.g\.|like)[^,;]*$", sentence[: m.start()])
        if m.group(0) in passage and sentence[m.start() - 1 : m.start()] != "=" and not example:
            options.append(("number", m))
    words = "|".join(NUMBER_WORDS[1:])  # "one" is too often a pronoun
    for m in re.finditer(rf"\b({words})\b(?= \w+s\b)", sentence, re.I):
        if re.search(rf"\b{m.group(1)}\b", passage, re.I) and " both " not in sentence:
            options.append(("word", m))
    for a, b in UNITS:
        for m in re.finditer(rf"(?<=\d )({a}|{b})\b", sentence):
            options.append(("unit", m))
    if not options:
        return None
    what, m = rng.choice(options)
    old = m.group(0)
    if what == "number":
        if "." in old:
            digits = len(old.split(".")[1])
            new = f"{float(old) * rng.choice([2, 10, 0.5]):.{digits}f}"
        else:
            n = int(old)
            new = str(
                rng.choice([n + 1, n * 2, n + 10]) if n < 2 else rng.choice([n - 1, n + 1, n * 2])
            )
        if new == old:
            return None
    elif what == "word":
        others = [w for w in NUMBER_WORDS[1:] if w != old.lower()]  # no "one copies"
        new = match_case(old, rng.choice(others))
    else:
        pair = next(p for p in UNITS if old in p)
        new = pair[1] if old == pair[0] else pair[0]
    return replace_at(sentence, m.start(), m.end(), new)


def perturb_command(
    sentence: str, passage: str, pools: dict[str, list[str]], rng: random.Random
) -> str | None:
    options = []
    for m in FUNCTION.finditer(sentence):
        if m.group(1) in passage:
            options.append(("function", m.start(1), m.end(1), m.group(1)))
    for m in FLAG.finditer(sentence):
        if m.group(1) in passage:
            options.append(("flag", m.start(1), m.end(1), m.group(1)))
    for m in GIT_SUBCOMMAND.finditer(sentence):
        if re.match(r"running\W*$", sentence[max(0, m.start() - 9) : m.start()], re.I):
            continue  # "running git add . becomes useless" -> another command: no conflict
        if m.group(1) in passage and m.group(1) in pools["subcommand"]:
            options.append(("subcommand", m.start(1), m.end(1), m.group(1)))
    if not options or NEGATION.search(sentence):
        return None
    shape, start, end, old = rng.choice(options)
    if re.search(r"\b(such as|like|e\.g\.)\W*$", sentence[max(0, start - 12) : start]):
        return None  # swapping one example of a list is not a contradiction
    if shape == "subcommand" and old in SUBCOMMAND_GROUPS:
        return None  # "git submodule add" -> "git fsck add" is not a command
    candidates = [
        c
        for c in pools[shape]
        if c != old and c not in passage and c.count(".") <= old.count(".") and len(c) <= 16
    ]
    if not candidates:
        return None
    return replace_at(sentence, start, end, rng.choice(candidates))


def perturb_negation(sentence: str, rng: random.Random) -> str | None:
    if NEGATION.search(sentence):
        if ";" in sentence or re.search(r"\b(some|but|rather than|instead)\b", sentence, re.I):
            return None  # "X does not Y; it Z" would contradict itself
        for pattern, new in REMOVE_NEGATION:
            m = re.search(pattern, sentence, re.I)
            if m:
                old = m.group(0)
                new_text = old[: -len(" not")] if new is None else match_case(old, new)
                return replace_at(sentence, m.start(), m.end(), new_text)
        return None
    if re.match(r"(some|sometimes|many|several)\b", sentence, re.I):
        return None  # "Some X are Y" -> "Some X are not Y" is compatible
    start = 0
    if SUBORDINATE.match(sentence):
        # negate the main clause, which follows the first comma
        start = sentence.find(",") + 1
        if start == 0:
            return None
    for m in AUXILIARY.finditer(sentence, start):
        clause = re.split(r"[,;]", sentence[start : m.start()])[-1]
        following = re.match(r" ?(\w*)", sentence[m.end() :]).group(1).lower()
        if m.group(1).lower() in ("do", "does") and following in PRO_FORM_FOLLOWERS:
            continue  # "as it does on vectors" is a pro-form, not an auxiliary
        if not CLAUSE_WORD.search(clause.lower()):
            break
    else:
        return None
    word = m.group(1)
    new = "cannot" if word.lower() == "can" else f"{word} not"
    return replace_at(sentence, m.start(), m.end(), match_case(word, new))


def perturb_antonym(sentence: str, rng: random.Random) -> tuple[str, str] | None:
    if NEGATION.search(sentence):
        return None  # "not necessarily the latest" is no longer a contradiction
    options = []
    for a, b, kind in ANTONYMS:
        if all(re.search(rf"\b{w}\b", sentence, re.I) for w in (a, b)):
            continue  # "left to right" -> "left to left"
        for word, opposite in ((a, b), (b, a)):
            for m in re.finditer(rf"(?<![\w.-]){word}(?![\w(-])", sentence, re.I):
                before = sentence[max(0, m.start() - 2) : m.start()]
                after = sentence[m.end() : m.end() + 2]
                if CODE_HINT.search(before + after):
                    continue
                head, tail = sentence[: m.start()].lower(), sentence[m.end() :].lower()
                if head.endswith(("not ", "or ", "git ")) or tail.startswith(" than one"):
                    continue  # "zero or more", "more than one", "git remote add"
                if m.start() == 0 and kind == "before_after":
                    continue  # "After X, Y holds" -> "Before X, ..." is rarely a contradiction
                if word in NOUN_ADJECTIVES and not re.match(r" [a-z]", sentence[m.end() :]):
                    continue  # adjective used as a noun: "it is remote"
                if re.search(r"\bnamed?s? (\w+ )?$", head) and word == "after":
                    continue  # "names it after a tag"
                if tail.startswith((" bad", " good")):
                    continue  # "the first bad commit" is a term, not an order
                if sentence[m.end() :].startswith(" modified"):
                    continue  # "last modified time" is a name, not an order
                options.append((m, opposite, kind))
    if not options:
        return None
    m, opposite, kind = rng.choice(options)
    return replace_at(sentence, m.start(), m.end(), match_case(m.group(0), opposite)), kind


def augment(rows: list[dict], chunk_dir: Path, seed: int) -> list[dict]:
    pools: dict[str, dict[str, list[str]]] = {}
    seen = {(r["passage"], r["sentence"]) for r in rows}
    out: list[dict] = []
    counters: dict[str, int] = {}
    for row in rows:
        if row["label"] != "SUPPORT":
            continue
        book = row["book"]
        if book not in pools:
            with (chunk_dir / f"{book}.jsonl").open(encoding="utf-8") as handle:
                texts = [json.loads(line)["text"] for line in handle]
            pools[book] = book_pools(texts)
        sentence, passage = row["sentence"], row["passage"]
        # one generator per row, so adding rows elsewhere leaves this row's output unchanged
        rng = random.Random(f"{seed}:{row['id']}")  # noqa: S311 - reproducible data, not security
        candidates: list[tuple[str, str]] = []
        value = perturb_value(sentence, passage, rng)
        if value:
            candidates.append(("value", value))
        command = None
        if row["kind"] != "generalisation":  # "tapply() and others" -> "array() and others"
            command = perturb_command(sentence, passage, pools[book], rng)
        if command:
            candidates.append(("command", command))
        negated = perturb_negation(sentence, rng)
        if negated:
            candidates.append(("negation", negated))
        antonym = perturb_antonym(sentence, rng)
        if antonym:
            candidates.append((antonym[1], antonym[0]))
        rng.shuffle(candidates)
        kinds_used: set[str] = set()
        for kind, raw in candidates:
            new = re.sub(r"\s{2,}", " ", raw).strip()
            if kind in kinds_used or len(kinds_used) >= 2:
                continue
            if new == sentence or new in passage or (passage, new) in seen:
                continue
            if not 8 <= len(new.split()) <= 35:
                continue
            kinds_used.add(kind)
            seen.add((passage, new))
            counters[book] = counters.get(book, 0) + 1
            out.append(
                {
                    "id": f"{book}-a{counters[book]:05d}",
                    "book": book,
                    "chunk_id": row["chunk_id"],
                    "passage": passage,
                    "sentence": new,
                    "label": "CONTRADICT",
                    "kind": kind,
                    "origin": "augmented",
                }
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--chunks", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rows = []
    for path in args.inputs:
        with path.open(encoding="utf-8") as handle:
            rows.extend(json.loads(line) for line in handle if line.strip())
    out = augment(rows, args.chunks, args.seed)
    with args.out.open("w", encoding="utf-8") as handle:
        for row in out:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(out)} augmented rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
