"""What a case is: an optimization, a workload, a ladder of cases with its reference, and one case at a
device and size (``CaseSpec``). The public API's types.

May import nothing of trainperf.
"""
