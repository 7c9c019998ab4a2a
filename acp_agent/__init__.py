"""Hermes over the Agent Client Protocol (``hermes acp``), on the ``agent-client-protocol`` SDK.

``agent.HermesAgent`` answers the editor's requests; ``session.Session`` turns one agent's
callbacks into ``session/update``s, permission requests and ``fs/*`` calls; ``content`` is the
pure mapping between Hermes' events and ACP's shapes. (Named ``acp_agent`` because the SDK owns
the import name ``acp``.)
"""
