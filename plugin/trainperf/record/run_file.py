"""The run document on disk: written whole at the session's end (``write_run_document``) and, with
--perf-report, after each case while the session runs (``write_progress``), so that a session killed
where it cannot write its reports (SIGKILL, a machine taken away) keeps every case it finished. Each
write goes beside the file and is moved over it: a reader, or a kill, never meets half a document.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainperf.measure.workers import RUN_FILE
from trainperf.record.document import run_document
from trainperf.store.locked_file import atomic_write

if TYPE_CHECKING:
    from trainperf.record.session import PerfSession

PROGRESS_NOTE = "written while the session ran: the cases it had finished; the session did not reach its end"


def write_run_document(session: PerfSession, directory: Path, name: str = RUN_FILE) -> Path:
    """``directory/name`` (``run.json``, or a worker's ``run-gwK.json``)."""
    return _replace(run_document(session), directory / name)


def write_progress(session: PerfSession, directory: Path, name: str = RUN_FILE) -> Path:
    """The same file while the session runs: its cases so far, ``"finished": false``, and each case held
    for its second measurement listed as unjudged with its first one's figures; the session's end
    rewrites it whole."""
    document = run_document(session)
    document.update(finished=False, unfinished=[*document["unfinished"], *session.unjudged()])
    document["notes"] = [*document["notes"], PROGRESS_NOTE]
    return _replace(document, directory / name)


def _replace(document: dict[str, Any], path: Path) -> Path:
    return atomic_write(path, json.dumps(document, indent=1) + "\n")
