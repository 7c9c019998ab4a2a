"""Background processes of a session (issue 27): the ``process`` tool, ``terminal(background=true)``
and the REPL's ``/ps``.

``manager`` owns them (output files under ``HERMES_HOME/sessions/<id>/processes/``, process
groups, cleanup at exit), ``guard`` is the tiny parent each one runs under so it dies with the
Hermes process that started it, ``tool`` is what the model calls.
"""
