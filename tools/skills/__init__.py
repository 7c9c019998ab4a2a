"""Skills (SPEC §10): procedures in the public Agent Skills format the agent loads on demand.

``format`` parses and validates SKILL.md (pure), ``loader`` finds skills on disk, ``index`` renders
the prompt's list, ``store`` is every write (locked, atomic, versioned), ``bundled`` installs the
starter skills, ``invoke`` turns ``/<skill> text`` into a message, ``review`` is the background
self-improvement pass.
"""
