"""The development authorization server of ``oam-gateway dev``: OAuth 2.1 on the gateway's
own origin, so MCP clients and the console sign the demo users in without a pasted token.

Built from Authlib's authorization-server components (RFC 6749 grants, RFC 7636 PKCE, RFC
7591 registration, RFC 8414 metadata, OpenID Connect) with joserfc keys: the server
(``server``), its grants (``grants``), memory (``store``, ``models``), registration
(``registration``), sign-in page (``sign_in_page``) and routes (``routes``). Clients, codes
and refresh tokens live in memory only. Development only: the demo users have no passwords.
"""

from oam_gateway.dev.authorization_server.routes import authorization_server_routes
from oam_gateway.dev.authorization_server.server import (
    CONSOLE_CLIENT_ID,
    CONSOLE_REDIRECT_PATH,
    DevAuthorizationServer,
)

__all__ = ["CONSOLE_CLIENT_ID", "CONSOLE_REDIRECT_PATH", "DevAuthorizationServer",
           "authorization_server_routes"]
