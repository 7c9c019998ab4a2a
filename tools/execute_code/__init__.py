"""``execute_code``: a Python script in a child process that calls the agent's tools (issue 27).

``tool`` is the tool and the parent's side of the RPC (every call goes through
``tools.registry.dispatch`` with the agent's own ToolContext: same policy, confinement,
approvals and checkpoints as a direct call); ``child`` starts the script; ``hermes_tools`` is the
module the script imports. The RPC is JSON lines over a socket pair inherited by the child, so
it needs no file or port and passes through the sandbox.
"""
