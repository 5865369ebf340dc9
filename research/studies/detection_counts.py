"""What a detection table holds, counted: per case and slowdown, its runs, how many the gate caught by
time and by host work, and the range of what they read against the baseline.

    PYTHONPATH=$PWD python research/studies/detection_counts.py research/evidence/data/h200-detection.csv \\
        [--cases CASE...] [--leases LEASE...] [--by-lease]

Rows 4 and 5 of the gate's acceptance (``research/evidence/trust.md``) count catches by check: a slowdown on
the GPU counts for row 4 only where the time caught it, since the extra work's launch is itself a host
call that the host-work check may catch. The table is ``research/studies/detection_rows.py``'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd


def counts(table: pd.DataFrame, by_lease: bool = False) -> pd.DataFrame:
    """Per case and slowdown (and lease, with ``by_lease``): runs, catches by time, by host work and by
    either, and the lowest and highest ``got``."""
    keys = ["case", "slowdown", *(["lease"] if by_lease else [])]
    by = table["caught_by"].fillna("none")
    frame = table.assign(by_time=by.str.contains("time"), by_host_work=by.str.contains("host work"))
    return frame.groupby(keys, sort=True).agg(
        runs=("got", "size"),
        by_time=("by_time", "sum"),
        by_host_work=("by_host_work", "sum"),
        caught=("caught", "sum"),
        got_min=("got", "min"),
        got_max=("got", "max"),
    )


def selected(table: pd.DataFrame, cases: list[str] | None, leases: list[str] | None) -> pd.DataFrame:
    """The rows of ``cases`` and ``leases`` (all where none are named); a name the table lacks is an error."""
    for column, names in (("case", cases), ("lease", leases)):
        if not names:
            continue
        unknown = sorted(set(names) - set(table[column]))
        if unknown:
            raise SystemExit(f"detection_counts: no {column} {', '.join(unknown)} in the table")
        table = table[table[column].isin(names)]
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path, help="a detection table of research/studies/detection_rows.py")
    parser.add_argument("--cases", nargs="+", help="only these cases")
    parser.add_argument("--leases", nargs="+", help="only the runs of these machines")
    parser.add_argument("--by-lease", action="store_true", help="a row per machine too")
    args = parser.parse_args(argv)
    if not args.table.is_file():
        raise SystemExit(f"detection_counts: no table {args.table}")
    table = selected(pd.read_csv(args.table, keep_default_na=False), args.cases, args.leases)
    shown = counts(table, args.by_lease)
    for column in ("got_min", "got_max"):
        shown[column] = shown[column].map("{:+.2%}".format)
    print(shown.reset_index().to_markdown(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
