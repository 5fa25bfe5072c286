"""The generation settings of ``settings_table``: where the OpenAI-compatible provider
is (``LLM_SETTINGS``), and the bounds of a generation (``GENERATION_SETTINGS``).

``SETTINGS`` splices them in at their places, so the README's table keeps its order.
"""

from __future__ import annotations

from citadel.app import circuit
from citadel.domain.limits import Limits
from citadel.domain.secrets import SecretStr
from citadel.setting_kinds import Integer, Number, OptionalFile, Secret, Setting, Text, ZeroOrOne

_LIMITS = Limits()

LLM_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_LLM_BASE_URL",
        "llm.base_url",
        Text(),
        "",
        "the OpenAI-compatible provider's base URL (needed for `openai`)",
    ),
    Setting(
        "CITADEL_LLM_MODEL", "llm.model", Text(), "", "the provider's model (needed for `openai`)"
    ),
    Setting(
        "CITADEL_LLM_API_KEY",
        "llm.api_key",
        Secret(min_bytes=0, strip=False),
        SecretStr(""),
        "its key (never logged or shown)",
        secret=True,
    ),
    Setting(
        "CITADEL_LLM_API_KEY_FILE",
        "llm.api_key_file",
        Text(),
        "",
        "a file holding the key instead (set one of the two, not both)",
    ),
    Setting(
        "CITADEL_LLM_CA_FILE",
        "llm.ca_file",
        OptionalFile(),
        None,
        "a private CA (PEM file) to check the provider's certificate with, instead of the system's",
    ),
)

GENERATION_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_GENERATOR_DEADLINE_S",
        "limits.generator_deadline_s",
        Number(),
        _LIMITS.generator_deadline_s,
        "the generator's own deadline; past it the answer degrades",
    ),
    Setting(
        "CITADEL_MAX_CONCURRENT_GENERATIONS",
        "limits.max_concurrent_generations",
        Integer(),
        _LIMITS.max_concurrent_generations,
        "bulkhead size; when full, answers degrade at once",
    ),
    Setting(
        "CITADEL_MAX_EVIDENCE",
        "limits.max_evidence",
        Integer(),
        _LIMITS.max_evidence,
        "passages the generator may see (fewer suits small local models)",
    ),
    Setting(
        "CITADEL_MAX_OUTPUT_TOKENS",
        "limits.max_output_tokens",
        Integer(),
        _LIMITS.max_output_tokens,
        "`max_tokens` asked of the provider",
    ),
    Setting(
        "CITADEL_CIRCUIT_FAILURES",
        "circuit_failures",
        Integer(),
        circuit.DEFAULT_THRESHOLD,
        "consecutive provider failures that open the generator's circuit: calls to it"
        " stop (`/readyz` reports the state)",
    ),
    Setting(
        "CITADEL_CIRCUIT_COOLDOWN_S",
        "circuit_cooldown_s",
        Number(),
        circuit.DEFAULT_COOLDOWN_S,
        "how long an open circuit stops calls before trying the provider again",
    ),
    Setting(
        "CITADEL_ANSWER_REPAIRS",
        "limits.max_repairs",
        ZeroOrOne(),
        _LIMITS.max_repairs,
        "regenerations after a refused candidate: `0` or `1`",
    ),
)
