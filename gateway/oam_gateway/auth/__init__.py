"""Who the caller is: bearer tokens verified against the issuer's keys (``verifier``, ``jwks``,
``token_cache``) and ``/mcp`` described as an OAuth 2.1 protected resource
(``resource_metadata``, RFC 9728). The middleware that applies them to requests is
:mod:`oam_gateway.middleware.bearer`."""
