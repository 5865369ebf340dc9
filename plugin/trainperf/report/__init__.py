"""Views of the run document: terminal, JUnit, HTML and Markdown pages, job summary, exports, plots.

May import ``spec``, ``profile``, ``measure``, ``judge``, ``store`` and ``record``.
"""
