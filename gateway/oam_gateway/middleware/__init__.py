"""The ASGI middleware around the routes and their order (``stack``): bearer authentication
(``bearer``), body size, rate limit, timeout, the audit event (``request_log``) and the request
span (``request_tracing``, named by ``matched_route``)."""
