"""Statistics, every check of a case's figures against its reference and stored baselines, and the one
policy (``policy.py``): which checks run, which only note, what is measured again, what counts as judged.

May import ``spec`` and ``measure`` (the figures it judges).
"""
