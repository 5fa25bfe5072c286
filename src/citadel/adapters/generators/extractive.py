"""The built-in extractive generator: quotes the evidence sentences that best match.

It needs no model. It scores each sentence of the closed evidence by the
question's terms (weighted by how rare they are across the evidence), picks
the best few from different passages first, and cites the passage each came
from. Its output is an ordinary candidate: it passes through the same
validation as any model's.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter

from citadel.domain.answer import Candidate, GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.text import split_sentences, terms
from citadel.domain.validation import check_display_text

_SPACE = re.compile(r"\s+")


class ExtractiveGenerator:
    name = "extractive"
    model = "extractive"
    prompt_version = "extractive/2"
    """Bump when the sentence choice changes, so cached answers are not reused.

    2: a sentence with HTML markup as the tokenizer reads it (``<Thread(worker 1, ...)>``,
    ``i<n``) is no longer quoted."""

    def __init__(self, limits: Limits | None = None, *, max_sentences: int = 3) -> None:
        self._limits = limits or Limits()
        self._max_sentences = max_sentences

    async def generate(self, request: GenerationRequest) -> Candidate:
        payload = {"segments": self.segments(request)}
        return Candidate(
            payload=payload,
            raw=json.dumps(payload, ensure_ascii=False),
            model=self.model,
            prompt_version=self.prompt_version,
        )

    def segments(self, request: GenerationRequest) -> list[dict[str, object]]:
        question = set(terms(request.question))
        sentences: list[tuple[int, str, str]] = []  # (rank, ref, text)
        for rank, item in enumerate(request.evidence):
            for start, end in split_sentences(item.passage):
                text = _SPACE.sub(" ", item.passage[start:end]).strip()
                # The validator's own display check, so the one definition of markup
                # decides: a sentence it would refuse is never quoted.
                if len(text.split()) >= 6 and check_display_text(text, self._limits) is None:
                    sentences.append((rank, item.ref, text))
        if not sentences:
            return []
        bags = [Counter(terms(text)) for _, _, text in sentences]
        df = Counter(t for bag in bags for t in bag)
        n = len(bags)

        def score(index: int) -> float:
            bag = bags[index]
            matched = sum(math.log(1 + n / df[t]) for t in question if bag[t])
            # Prefer better-ranked passages a little, and sentences of useful length.
            rank, _, text = sentences[index]
            # A whole sentence reads better than a fragment cut off by a code line.
            whole = 1.0 if text[0].isupper() and text[-1] in ".!?:" else 0.6
            return whole * matched / (1 + 0.05 * rank) / (1 + abs(len(bag) - 18) / 40)

        order = sorted(range(n), key=lambda i: (-score(i), i))
        order = [i for i in order if score(i) > 0] or order[:1]
        chosen: list[int] = []
        used_refs: set[str] = set()
        for index in order:  # one sentence per passage first ...
            if len(chosen) < self._max_sentences and sentences[index][1] not in used_refs:
                chosen.append(index)
                used_refs.add(sentences[index][1])
        for index in order:  # ... then the next best from any passage
            if len(chosen) < self._max_sentences and index not in chosen:
                chosen.append(index)
        # Read in the order the evidence gave them, sentence by sentence.
        chosen.sort()
        return [{"text": sentences[i][2], "evidence_ids": [sentences[i][1]]} for i in chosen]
