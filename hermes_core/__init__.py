"""The ground every other package stands on: paths and private files under HERMES_HOME,
configuration, redaction, retry, atomic writes, token estimates, hooks and the plugin API.

It imports nothing else of the project (tests/test_import_graph.py holds it to that), so any
layer, and any plugin, may import it without pulling in the loop, the store or a surface.
"""
