"""MCP client (SPEC §14): configured Model Context Protocol servers' tools become agent tools.

`config` parses `mcp_servers` (pure), `connection` keeps one server connected over a
`transport`, `manager` owns all of them on a background loop (one per process), `tools` turns
their tools into registry tools, `launcher` makes sure no server outlives Hermes. Nothing here
imports the SDK until a server starts.
"""
