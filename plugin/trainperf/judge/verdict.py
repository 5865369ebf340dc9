"""A case's verdict: the one word every view (terminal, JUnit, run.json, report, job summary) shows for it.

Made here alone: from a finished case's checks (``of_checks``), or named for a case that ended without
them (an error, its time limit, an interrupt, a second measurement the session's end cut off).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from trainperf.judge.checks import Check, CheckName


class Verdict(enum.StrEnum):
    """Every verdict a case can have; run.json's schema publishes the same values."""

    PASS = "pass"
    FAIL = "fail"
    NOT_JUDGED = "not judged"  # held for a second measurement the session did not reach; a check not made
    UNRELIABLE = "unreliable"  # the GPU throttled while the case ran: its time says little about the code
    ERROR = "error"  # the case raised: the test shows the traceback
    TIMEOUT = "timeout"  # the case ran past its time limit
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM while the case ran

    @classmethod
    def read(cls, text: str) -> Verdict:
        """A verdict as a run document spells it; documents written before this type said "unjudged"."""
        return cls.NOT_JUDGED if text == "unjudged" else cls(text)


def of_checks(checks: Iterable[Check]) -> Verdict:
    """FAIL if any check failed, else UNRELIABLE when the GPU throttled, else PASS."""
    checks = list(checks)
    if any(check.passed is False for check in checks):
        return Verdict.FAIL
    return Verdict.UNRELIABLE if any(check.name == CheckName.CLOCKS for check in checks) else Verdict.PASS


def outcome(passed: bool | None) -> Verdict:
    """One check's outcome in the same words: passed, failed, or not judged (a note)."""
    return Verdict.NOT_JUDGED if passed is None else Verdict.PASS if passed else Verdict.FAIL
