"""What the gateway tells its operators about a request: OpenTelemetry spans and settings
(``telemetry``) and the one audit event each request leaves (``request_events``, filled by the
routes and written by :mod:`oam_gateway.middleware.request_log`). The lowest package: it imports
nothing of the gateway."""
