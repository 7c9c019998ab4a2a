"""The rooms of ``run_agent.AIAgent``, one mixin each: the provider client and requests
(``provider``), the tools (``tools``), the system prompt (``prompt``), the session in the store
(``session``) and the surface's callbacks (``status``).

Why mixins rather than helper objects: the seed test and Hermes code patch and read these
methods and attributes on the agent itself (``agent._persist_session``, ``agent.client``, ...),
so they stay reachable on the instance. Each mixin names, as class annotations, the attributes
it uses that ``AIAgent.__init__`` sets. Names the tests patch on ``run_agent`` (``OpenAI``,
``get_tool_definitions``, ...) are looked up there, through ``AIAgent``, never imported here.
"""
