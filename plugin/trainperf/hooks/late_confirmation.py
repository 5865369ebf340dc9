"""A case that looks slower is measured again at the end of the session, not right away; the cases to
profile are profiled there too, together.

What slowed a first measurement (a fresh machine's first minutes, another guest's burst) can last long
enough to slow a second one taken seconds later in the same state (research/evidence/h200-fresh-host-runs.md);
minutes later, after the other cases, such a transient is less likely to last, while a regression of the
code still does. The test of such a case stops after its first measurement (``ConfirmLater``) and its
reports are held back; after the last item the test runs again, takes the held measurement, measures the
case afresh and reports once. A session that ends before it (Ctrl-C, SIGTERM) names each such case and
keeps its first measurement's figures (``unjudged``).
A profiling child costs seconds to start; one for all the profiled cases pays them once. The test of a
case to profile reports after that child, its profile in its JUnit properties and pytest-html row; a
session that ends before it reports them without one.
Not under pytest-xdist's workers (their controller expects each item's reports in turn) nor in processes
of a launched group (every rank must run the same cases in the same order): there the second
measurement follows the first.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.runner import runtestprotocol

if TYPE_CHECKING:
    from trainperf.hooks.attach_profile import ToProfile
    from trainperf.record.result import CaseResult
    from trainperf.record.session import Held, PerfSession

PLUGIN_NAME = "trainperf-late-confirmation"


class ConfirmLater(BaseException):  # an outcome, as pytest's own Skipped and Failed are
    """Ends a test whose case will be measured again at the end of the session; never reported."""


class LateConfirmation:
    """pytest hooks that hold back the items whose case waits for its second measurement, then run them
    again after the last item; and the reports of the items whose case waits for its profile, logged
    once the cases are profiled."""

    def __init__(self, profiles_at_end: bool = True) -> None:
        self.profiles_at_end = profiles_at_end
        self.waiting: list[pytest.Item] = []
        self.to_profile: list[ToProfile] = []
        self.unlogged: list[tuple[pytest.Item, list[pytest.TestReport]]] = []  # waiting for their profile
        self.session: PerfSession | None = None  # the cases' session, where one is held or profiled

    def may_hold(self, nodeid: str) -> bool:
        """Whether this item runs for the first time: in its run at the end, a case is measured again at once."""
        return all(item.nodeid != nodeid for item in self.waiting)

    def hold(self, session: PerfSession, nodeid: str, case: str, first: CaseResult, suspect: dict[str, str]) -> None:
        """The case waits in the session (``PerfSession.held``) for its item's run at the end."""
        self.session = session
        session.hold(case, nodeid, first, suspect)

    def take(self, session: PerfSession, nodeid: str, case: str) -> Held | None:
        """The case's held first measurement, in the item's run at the end; None otherwise."""
        return None if self.may_hold(nodeid) else session.held.get((case, nodeid))

    def _holds(self, nodeid: str) -> bool:
        return self.session is not None and any(held == nodeid for _, held in self.session.held)

    def profile_later(self, session: PerfSession, case: ToProfile) -> None:
        self.session = session
        self.to_profile.append(case)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        """As pytest's own protocol for an item of trainperf cases, its reports kept back where one of its
        cases was held; pytest's own for other items."""
        if "trainperf" not in getattr(item, "fixturenames", ()):
            return None
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if self._holds(item.nodeid):
            self.waiting.append(item)
        else:
            self._log_or_keep(item, reports)
        return True

    def _log_or_keep(self, item: pytest.Item, reports: list[pytest.TestReport]) -> None:
        if any(case.nodeid == item.nodeid for case in self.to_profile):
            self.unlogged.append((item, reports))
        else:
            _log(item, reports)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        """After the last item, the held items run again, then the cases to profile are profiled. An
        interrupt, in the loop or in those runs, propagates as pytest's own would; the cases still held
        are named at the end (``unjudged``), the reports kept for a profile are logged without one."""
        profiled = False
        try:
            result = yield
            if not (session.shouldfail or session.shouldstop):
                for item in list(self.waiting):
                    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
                    self._log_or_keep(item, runtestprotocol(item, nextitem=None, log=False))
                    self.waiting.remove(item)
                    if self.session is not None:
                        self.session.held = {key: h for key, h in self.session.held.items() if key[1] != item.nodeid}
            if self.to_profile and self.session is not None:
                from trainperf.hooks.attach_profile import attach_late

                attach_late(self.session, self.to_profile, self.unlogged)
                profiled = True
        finally:
            if self.unlogged and not profiled and self.session is not None:
                cases = ", ".join(case.result.key for case in self.to_profile)
                self.session.note(f"not profiled: the session ended before the profiles of {cases}")
            for item, reports in self.unlogged:
                _log(item, reports)
            self.unlogged.clear()
        return result

    def unjudged(self) -> list[str]:
        """The items still waiting for their second measurement, where the session ended before it."""
        return [item.nodeid for item in self.waiting]


def _log(item: pytest.Item, reports: list[pytest.TestReport]) -> None:
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
