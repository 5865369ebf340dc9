"""The session's state (no I/O), each case's result and the run document every report reads.

May import ``config``, ``spec``, ``measure``, ``child``, ``profile``, ``judge`` and ``store``.
"""
