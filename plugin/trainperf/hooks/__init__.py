"""The pytest wiring: the entry point's hooks, the ``trainperf`` fixture that orchestrates one case, and
what a run writes as it goes and at its end.

May import ``config``, ``spec``, ``measure``, ``child``, ``profile``, ``judge``, ``store``, ``record`` and
``report``:
it is the top (the command line and the adapters stand beside it).
"""
