"""The model families as name → builder tables: the one place a choice is declared.

Each table's keys are the names its setting takes, in the order its error message
lists them (``CITADEL_EMBEDDER``, ``CITADEL_GENERATOR``; the support checkers and
relevance scorers are in ``support.py`` and ``relevance.py``, beside their fallback).
The settings sit below the composition root, so they read the names from
``citadel.setting_choices``, which ``scripts/settings_table.py --write`` writes
from these tables (``choices_module``) and a test compares. A row whose builder is
``None`` builds nothing: no embedder (lexical search only), no scorer. The contract
suites in ``tests/contract/`` take their adapters from these tables.

``PARSERS`` are tried in order on each file (the first that accepts it reads it);
each key is its parser's family, the ``pdf`` of ``pdf/1``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TypeVar

from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.adapters.generators.contract import GeneratorConfigError
from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.adapters.generators.openai import OpenAICompatibleGenerator
from citadel.adapters.parsers.epub import EpubParser
from citadel.adapters.parsers.html import HtmlParser
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.parsers.markdown_folder import MarkdownFolderParser
from citadel.adapters.parsers.pdf import PdfParser
from citadel.adapters.parsers.plaintext import PlainTextParser
from citadel.app.ports import AnswerGenerator, DocumentParser, Embedder, RelevanceScorer
from citadel.bootstrap.relevance import RELEVANCE_SCORERS
from citadel.bootstrap.support import SUPPORT_CHECKERS
from citadel.config import ConfigError, Settings

EmbedderBuilder = Callable[[Settings], Embedder]
GeneratorBuilder = Callable[[Settings, Embedder | None, RelevanceScorer | None], AnswerGenerator]
"""Built with the search's embedder and the answerability's relevance scorer."""
ParserBuilder = Callable[[Settings], DocumentParser]
_Row = TypeVar("_Row")


def _minilm(settings: Settings) -> Embedder:
    return MiniLmEmbedder(threads=settings.embedder_threads, precision="int8")


def _minilm_float(settings: Settings) -> Embedder:
    return MiniLmEmbedder(threads=settings.embedder_threads, precision="float")


def _hashing(settings: Settings) -> Embedder:
    return HashingEmbedder()


EMBEDDERS: Mapping[str, EmbedderBuilder | None] = {
    "minilm": _minilm,
    "minilm-float": _minilm_float,
    "hashing": _hashing,
    "none": None,
}


def _extractive(
    settings: Settings, embedder: Embedder | None, relevance: RelevanceScorer | None
) -> AnswerGenerator:
    # The search's own embedder: one model loaded, and sentences chosen by meaning.
    # Not the relevance scorer: choosing by it cited the gold passage less often on
    # the team's QA set (docs/answers.md); ``ExtractiveGenerator(relevance=...)``.
    return ExtractiveGenerator(settings.limits, embedder=embedder)


def _openai(
    settings: Settings, embedder: Embedder | None, relevance: RelevanceScorer | None
) -> AnswerGenerator:
    llm = settings.llm
    try:
        return OpenAICompatibleGenerator(
            llm.base_url,
            llm.model,
            llm.api_key,
            ca_file=llm.ca_file,
            deadline_s=settings.limits.generator_deadline_s,
            max_output_tokens=settings.limits.max_output_tokens,
        )
    except GeneratorConfigError as exc:
        raise ConfigError(str(exc)) from None


GENERATORS: Mapping[str, GeneratorBuilder] = {
    "extractive": _extractive,
    "openai": _openai,
}

PARSERS: Mapping[str, ParserBuilder] = {
    "pdf": lambda settings: PdfParser(max_pages=settings.max_pages),
    "epub": lambda settings: EpubParser(),
    "html": lambda settings: HtmlParser(max_pages=settings.max_pages),
    "markdown": lambda settings: MarkdownParser(),
    "markdown-folder": lambda settings: MarkdownFolderParser(max_pages=settings.max_pages),
    "text": lambda settings: PlainTextParser(),
}


def embedder_for(settings: Settings) -> Embedder | None:
    """The embedder ``CITADEL_EMBEDDER`` names; None for ``none``."""
    build = _row(EMBEDDERS, settings.embedder, "embedder")
    return None if build is None else build(settings)


def generator_for(
    settings: Settings, embedder: Embedder | None, relevance: RelevanceScorer | None
) -> AnswerGenerator:
    """The generator ``CITADEL_GENERATOR`` (or ``--generator``) names."""
    return _row(GENERATORS, settings.generator, "generator")(settings, embedder, relevance)


def default_parsers(settings: Settings) -> tuple[DocumentParser, ...]:
    """Every parser, in the order they are tried."""
    return tuple(build(settings) for build in PARSERS.values())


def _row(table: Mapping[str, _Row], name: str, family: str) -> _Row:
    """The row ``name`` names; the settings refuse any other name before this is asked."""
    if name not in table:
        raise ValueError(f"unknown {family} {name!r}")
    return table[name]


CHOICES: Mapping[str, Mapping[str, object]] = {
    "EMBEDDERS": EMBEDDERS,
    "GENERATORS": GENERATORS,
    "SUPPORT_CHECKERS": SUPPORT_CHECKERS,
    "RELEVANCE_SCORERS": RELEVANCE_SCORERS,
}
"""The tables whose names a setting takes, by the name ``citadel.setting_choices`` gives them."""


def choices_module() -> str:
    """The text of ``citadel.setting_choices``: each table's names, in table order."""
    rows = "".join(
        f"{name} = (\n" + "".join(f"    {json.dumps(key)},\n" for key in table) + ")\n"
        for name, table in CHOICES.items()
    )
    return f"{_CHOICES_DOCSTRING}\nfrom __future__ import annotations\n\n{rows}"


_CHOICES_DOCSTRING = '''"""The names each model family's setting takes: its table's keys.

Written by ``scripts/settings_table.py --write`` from the name → builder tables in
``citadel.bootstrap`` (``families.py``, ``support.py``, ``relevance.py``), which the
settings may not import; ``tests/unit/test_settings.py`` fails when it is stale.
Add a name to its table, not here.
"""
'''
