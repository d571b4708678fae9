"""RFC 7591 dynamic client registration: public clients with loopback or ``https`` redirects.

Anyone who reaches the server may register (it serves the development gateway on this
machine). A client is public: its ``token_endpoint_auth_method`` is ``none`` (also when the
request leaves it out, RFC 7591 §3.2.1 lets the server choose) and it gets no secret; PKCE
proves it. Each redirect URI must be ``https``, or ``http`` on a loopback host (RFC 8252
§7.3), and carry no fragment; anything else is ``invalid_redirect_uri``.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc7591 import (  # type: ignore[import-untyped]
    ClientRegistrationEndpoint,
    InvalidRedirectURIError,
)

from oam_gateway.dev.authorization_server.models import Client

if TYPE_CHECKING:
    from oam_gateway.dev.authorization_server.server import DevAuthorizationServer

__all__ = ["ClientRegistration", "acceptable_redirect_uri"]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def acceptable_redirect_uri(uri: object) -> bool:
    """Whether ``uri`` may be registered: ``https``, or ``http`` to a loopback host; absolute,
    without a fragment or user information."""
    if not isinstance(uri, str):
        return False
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return False
    if not host or parts.fragment or "#" in uri or parts.username is not None:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(host))


class ClientRegistration(ClientRegistrationEndpoint):  # type: ignore[misc]
    """Authlib's registration endpoint, keeping clients in the server's memory."""

    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration: the development server is for this machine

    def get_server_metadata(self) -> dict[str, Any]:
        server: DevAuthorizationServer = self.server
        return server.metadata

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        data = request.payload.data
        uris = data.get("redirect_uris")
        if not uris or not isinstance(uris, list):
            raise InvalidRedirectURIError("'redirect_uris' is required (authorization code)")
        if not all(acceptable_redirect_uri(uri) for uri in uris):
            raise InvalidRedirectURIError("each redirect URI must be https, or http on a "
                                          "loopback host, without a fragment")
        data.setdefault("token_endpoint_auth_method", "none")
        metadata: dict[str, Any] = super().extract_client_metadata(request)
        return metadata

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info: dict[str, Any] = super().generate_client_info(request)
        info.pop("client_secret", None)  # a public client: no secret
        info.pop("client_secret_expires_at", None)
        return info

    def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any],
                    request: Any) -> Client:
        server: DevAuthorizationServer = self.server
        client = Client(
            client_id=client_info["client_id"],
            redirect_uris=tuple(client_metadata["redirect_uris"]),
            scope=client_metadata.get("scope") or server.default_client_scope,
            client_name=str(client_metadata.get("client_name", "")),
            grant_types=tuple(client_metadata.get("grant_types", ["authorization_code"])),
            response_types=tuple(client_metadata.get("response_types", ["code"])),
            client_id_issued_at=client_info["client_id_issued_at"])
        server.store.register(client)
        return client
