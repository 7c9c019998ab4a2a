"""Hermes as an MCP server (``hermes mcp serve``, stdio, on the official ``mcp`` SDK) for Claude
Desktop, Cursor and other MCP hosts: conversations, messages, approvals and cron jobs as tools.

``tools.build(backend)`` is the server; the backend (what runs the turns) is handed in by the
launcher (``hermes_cli``), so this package imports no other surface.
"""
