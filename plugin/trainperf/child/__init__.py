"""A case's test node run again in a fresh process: the protocol between parent and child, the child's
command line and its run (logged, time-limited, one error type: ``ChildError``), the measuring child
(confirmations and a recording's extra runs) and the profiling child's marked iteration. ``profile``
starts its children here.

May import ``spec`` and ``measure``.
"""
