"""Web tools (issue 23): web_search over pluggable backends (``backends/``), web_extract
(``fetch`` through the SSRF guard ``ssrf``, ``extract`` to markdown, ``budget`` per page)."""
