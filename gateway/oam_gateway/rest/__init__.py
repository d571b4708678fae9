"""The REST API under ``/v1``: each operation declared once (``endpoints``), its bodies
(``models``, ``views``, ``pagination``), the routes of each resource (``me``, ``threads``,
``memories``, ``search``, listed together by ``routes``) and the OpenAPI document built from
them (``openapi``)."""
