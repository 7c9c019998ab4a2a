"""Checkpoints of the working directory before the agent changes it, and their restore.

``store`` keeps them (a shadow git repository per directory under HERMES_HOME), ``hook`` takes
one before the first file change of each turn, the REPL's ``/rollback`` and
``hermes checkpoints list|diff|restore`` show and restore them.
"""
