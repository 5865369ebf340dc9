"""Nsight Compute's raw page (``ncu -i report.ncu-rep --csv --page raw``) as one row of SI numbers per
profiled kernel launch. Pure: pandas only.

The page's first data row holds each metric's unit (``us``, ``Tbyte/s``, ``Kbyte/cycle``, ``Ghz``...);
values may carry thousands separators. Every value is scaled to its base unit (seconds, bytes, hertz).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd

from trainperf.measure.torch_trace import ProfileFormatError

ID_COLUMNS = ("ID", "Kernel Name")
SHAPE_COLUMNS = ("Grid Size", "Block Size")  # "(2, 66, 1)": kept as text where the page has them
PREFIXES = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3}


def unit_scale(unit: str) -> float:
    """Factor that turns a value in ``unit`` into its base unit: 'us' -> 1e-6, 'Tbyte/s' -> 1e12."""
    unit = unit.strip()
    if unit in TIME_UNITS:
        return TIME_UNITS[unit]
    match = re.fullmatch(r"([KMGTP]?)(byte|hz|Hz|inst|cycle|sector|request|warp|thread|flop)(/.*)?", unit)
    if match:
        return PREFIXES[match.group(1)]
    return 1.0  # %, counts, ratios, "nan"


def read_ncu_raw(source: Path | str) -> pd.DataFrame:
    """One row per profiled launch: ``ID``, ``Kernel Name``, its grid and block, and every metric as a
    float in base units."""
    name = str(source)
    try:
        text = Path(source).read_text(encoding="utf-8") if isinstance(source, Path) else source
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise ProfileFormatError(f"{name}: not an ncu raw CSV page ({error})") from None
    missing = [column for column in (*ID_COLUMNS, "gpu__time_duration.sum") if column not in frame.columns]
    if missing or len(frame) < 2:
        raise ProfileFormatError(f"{name}: not an ncu raw CSV page: missing {missing or 'kernel rows'}")
    units, rows = frame.iloc[0], frame.iloc[1:].reset_index(drop=True)
    metrics = {column: _numbers(rows[column], units[column]) for column in frame.columns if "__" in column}
    kept = [column for column in (*ID_COLUMNS, *SHAPE_COLUMNS) if column in frame.columns]
    return pd.concat([rows[kept], pd.DataFrame(metrics)], axis=1)


def _numbers(values: pd.Series, unit: str) -> pd.Series:
    cleaned = pd.to_numeric(values.str.replace(",", "", regex=False), errors="coerce")
    return cleaned * unit_scale(unit)
