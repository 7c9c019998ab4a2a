"""Browser tools (issue 23): Playwright driving Chromium, one browser per agent session."""
