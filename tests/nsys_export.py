"""The H100 captures' nsys exports read as the plugin read them before it read ``nsys stats``: the
launches and NVTX ranges of an SQLite export, for the tests of what is built from a capture and for
the check that the stats reports hold the same launches."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
from trainperf.measure.torch_trace import Capture

KERNELS = (
    "SELECT k.start, k.end, n.value AS name, s.value AS short, m.value AS mangled, r.start AS launch, "
    "'(' || k.gridX || ', ' || k.gridY || ', ' || k.gridZ || ')' AS grid, "
    "'(' || k.blockX || ', ' || k.blockY || ', ' || k.blockZ || ')' AS block, "
    "k.registersPerThread AS registers FROM CUPTI_ACTIVITY_KIND_KERNEL k "
    "JOIN StringIds n ON n.id = k.demangledName JOIN StringIds s ON s.id = k.shortName "
    "LEFT JOIN StringIds m ON m.id = k.mangledName "
    "LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId"
)
RANGES = (
    "SELECT COALESCE(e.text, t.value) AS name, e.start, e.end FROM NVTX_EVENTS e "
    "LEFT JOIN StringIds t ON t.id = e.textId WHERE e.end IS NOT NULL"
)


def read_sqlite(path: Path) -> Capture:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        launches = pd.read_sql_query(KERNELS, db).astype({"start": "float64", "end": "float64", "launch": "float64"})
        ranges = pd.read_sql_query(RANGES, db).astype({"start": "float64", "end": "float64"})
    return Capture(launches, ranges, str(path))
