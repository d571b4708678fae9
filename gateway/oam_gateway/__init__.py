"""The secure gateway of Oracle AI Agent Memory: REST and MCP over the SDK, one end-user context
per request. Its packages are layered, each importing only those below it: ``mcp``, ``rest``,
``middleware``, ``auth``, ``errors``, ``tenancy``, ``config``, ``observability`` (checked by
import-linter); ``app`` assembles them and ``cli`` and ``asgi`` start it."""
