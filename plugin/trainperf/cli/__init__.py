"""The ``trainperf`` command: reports, comparisons, exports and calibration from run documents, without
re-running anything.

May import ``config``, ``judge``, ``store``, ``record`` and ``report``.
"""
