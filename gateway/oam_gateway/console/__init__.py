"""``/console``: the end user's memory console, served by the gateway.

A person signs in with their identity provider (OIDC authorization code with PKCE,
``signin``), holds a server-side session (``sessions``) and reads and changes their memory
through the REST operations themselves (``operations``), each run with their own access token
inside their end-user context, so the database decides what a page shows. Pages are rendered
on the server (``views``, ``markup``, ``pages``, ``graph``) with one stylesheet (``static/``),
under a strict Content-Security-Policy (``headers``); ``routes`` mounts them.
"""
