"""The per-device baseline files: load, validate, merge under a lock, history; the commit a run measured.

May import ``judge`` (a stored baseline's noise).
"""
