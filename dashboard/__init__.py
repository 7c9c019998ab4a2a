"""The web dashboard (``hermes dashboard``, or the gateway with ``gateway.dashboard: true``).

A small hand-written page (``static/``) over the API server's routes (``/v1/runs`` for the chat,
``/api/sessions``, ``/api/jobs``, ``/v1/skills``) plus its own (``/api/dashboard/*``: memory,
config, search, skills' history, cron output, status and logs). ``routes.register(server)``
mounts it on an API server; ``plugin.register(ctx)`` offers that to the gateway.
"""
