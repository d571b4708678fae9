"""The MCP server at ``/mcp`` (``server``): its tools (``toolset``), each running a declared REST
operation through the same handler and end-user context (``tools``)."""
