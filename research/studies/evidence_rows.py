"""Rows for a committed evidence table (``research/evidence/data/*.csv``), made from one lease's raw files:
the command line of the tools that make them, and the rows appended under the table's own header,
which must be the rows' columns, or printed with the header where no table is named."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd


def write(table: pd.DataFrame, columns: list[str], append: Path | None, float_format: str | None = None) -> None:
    """Append ``table`` to ``append`` (left untouched where its header is not ``columns``), or print it."""
    if append is None:
        table.to_csv(sys.stdout, index=False, float_format=float_format)
        return
    header = pd.read_csv(append, nrows=0).columns.tolist()
    if header != columns:
        raise SystemExit(f"{append}: its header is {header}, not {columns}")
    table.to_csv(append, mode="a", header=False, index=False, float_format=float_format)
    print(f"{append}: {len(table)} rows added")


def arguments(argv: list[str] | None, description: str, sources: str) -> argparse.Namespace:
    """``LEASE SOURCES... [--append TABLE]``: ``args.lease``, ``args.sources`` and ``args.append``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("lease", help="the machine the runs were measured on")
    parser.add_argument("sources", nargs="+", type=Path, metavar=sources)
    parser.add_argument("--append", type=Path, help="the table to append to; it must exist with this header")
    return parser.parse_args(argv)


def main(
    argv: list[str] | None,
    description: str,
    sources: str,
    rows: Callable[[str, list[Path]], pd.DataFrame],
    columns: list[str],
    float_format: str | None = None,
) -> int:
    """A row tool's command line: ``rows(LEASE, SOURCES)`` appended to ``--append`` or printed."""
    args = arguments(argv, description, sources)
    write(rows(args.lease, args.sources), columns, args.append, float_format)
    return 0
