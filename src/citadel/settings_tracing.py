"""The tracing settings of ``settings_table``: citadel's collector endpoint and the
standard OpenTelemetry variables (docs/observability.md).

citadel's ``CITADEL_OTEL_ENDPOINT`` wins over the standard endpoints. Of the standard
variables, citadel reads only whether an endpoint is set and whether the SDK is
disabled, to know whether to load the SDK at all; the SDK reads the URLs, the
resource's variables and the exporter's others (headers, certificate, timeout) itself.
"""

from __future__ import annotations

from citadel.setting_kinds import Setting, Text, TrueWord

TRACING_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_OTEL_ENDPOINT",
        "otel_endpoint",
        Text(),
        "",
        "an OTLP/HTTP collector for traces: its base URL (`/v1/traces` is added) or a full"
        " traces URL; wins over the standard `OTEL_EXPORTER_OTLP_*` endpoints below"
        " (docs/observability.md)",
    ),
    Setting(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "otel_exporter_endpoint",
        Text(),
        "",
        "the collector's base URL (`/v1/traces` is added); set alone, it turns tracing on",
        standard=True,
    ),
    Setting(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "otel_traces_endpoint",
        Text(),
        "",
        "the collector's full traces URL, kept as given; wins over"
        " `OTEL_EXPORTER_OTLP_ENDPOINT`; set alone, it turns tracing on",
        standard=True,
    ),
    Setting(
        "OTEL_SDK_DISABLED",
        "otel_sdk_disabled",
        TrueWord(),
        False,
        "`true` (in any case): no tracing at all, whatever endpoint is set (the SDK is not"
        " even loaded)",
        standard=True,
    ),
)

RESOURCE_VARIABLES: tuple[tuple[str, str], ...] = (
    (
        "OTEL_SERVICE_NAME",
        "the traces' `service.name` (`citadel` when neither this nor"
        " `OTEL_RESOURCE_ATTRIBUTES` names one)",
    ),
    (
        "OTEL_RESOURCE_ATTRIBUTES",
        "more resource attributes, `key=value,…` (`deployment.environment.name=prod`);"
        " `OTEL_SERVICE_NAME` wins for `service.name`",
    ),
)
"""Standard variables only the SDK reads (citadel never does): documented beside the
settings, and known to ``is_known_variable``."""
