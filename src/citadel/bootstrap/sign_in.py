"""Single sign-on when the settings name an OpenID provider (``CITADEL_OIDC_*``)."""

from __future__ import annotations

from citadel.adapters.oidc import AuthlibProvider
from citadel.app.sign_in import ExternalSignIn
from citadel.app.users import UserService
from citadel.config import Settings
from citadel.domain.identity import ClaimNames


def external_sign_in(settings: Settings, users: UserService) -> ExternalSignIn | None:
    oidc = settings.oidc
    if not oidc.enabled:
        return None
    provider = AuthlibProvider(
        oidc.issuer,
        oidc.client_id,
        oidc.client_secret.get_secret_value(),
        scopes=oidc.scopes,
    )
    claims = ClaimNames(
        groups=oidc.groups_claim, tenant=oidc.tenant_claim, default_tenant=settings.tenant
    )
    return ExternalSignIn(provider, users, claims, oidc.label)
