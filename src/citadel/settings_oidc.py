"""The OpenID Connect sign-in settings of ``settings_table`` (docs/sign-in.md): which
provider, this server's client registration there, and where the groups and the
tenant are in the provider's claims. Sign-in through a provider is on when both
the issuer and the client id are set.
"""

from __future__ import annotations

from citadel.domain.secrets import SecretStr
from citadel.setting_kinds import PublicUrl, Secret, Setting, Text

OIDC_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_OIDC_ISSUER",
        "oidc.issuer",
        PublicUrl(),
        "",
        "the OpenID provider's issuer URL (its discovery document is under it); with"
        " `CITADEL_OIDC_CLIENT_ID`, the sign-in page offers single sign-on",
        note="(off)",
    ),
    Setting(
        "CITADEL_OIDC_CLIENT_ID",
        "oidc.client_id",
        Text(),
        "",
        "this server's client id at the provider, registered with the redirect URI"
        " `<CITADEL_PUBLIC_URL>/signin/oidc/callback`",
    ),
    Setting(
        "CITADEL_OIDC_CLIENT_SECRET",
        "oidc.client_secret",
        Secret(min_bytes=1),
        SecretStr(""),
        "the client's secret (empty: a public client, PKCE alone)",
        secret=True,
        shown="none",
    ),
    Setting(
        "CITADEL_OIDC_SCOPES",
        "oidc.scopes",
        Text(),
        "openid profile email",
        "the scopes asked for (`openid` is always among them)",
    ),
    Setting(
        "CITADEL_OIDC_GROUPS_CLAIM",
        "oidc.groups_claim",
        Text(),
        "groups",
        "the claim holding a user's groups, a dotted path into nested claims"
        " (`realm_access.roles`); they replace the user's groups at each sign-in",
    ),
    Setting(
        "CITADEL_OIDC_TENANT_CLAIM",
        "oidc.tenant_claim",
        Text(),
        "",
        "the claim holding a user's tenant (empty: every user of the provider is in"
        " `CITADEL_TENANT`)",
    ),
    Setting(
        "CITADEL_OIDC_LABEL",
        "oidc.label",
        Text(),
        "single sign-on",
        "what the sign-in button calls the provider (Sign in with ...)",
    ),
)
