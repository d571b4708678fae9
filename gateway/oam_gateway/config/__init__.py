"""The gateway's settings models: the gateway's own (``settings``), each tenant's
(``tenant_settings``, ``oracle_settings`` for an Oracle database) and the request limits
(``limits``). They load and validate a TOML file and ``OAM_GATEWAY_*`` variables and are read by
every other package; they import none of them but :mod:`oam_gateway.observability` (the
telemetry settings)."""
