"""Print a Markdown table of a run document: python ci/run_table.py perf-report/run.json"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd


def table(path: str) -> pd.DataFrame:
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    rows = []
    for bench in document["benchmarks"]:
        info = bench["extra_info"]
        rows.append(
            {
                "case": bench["name"],
                "median ms/iter": round(info["summary_ms"]["median"], 3),
                "IQR ms": round(info["summary_ms"]["iqr"], 3),
                "speedup vs reference": round(info["speedup"], 2),
                f"{info.get('sample_unit', 'samples')}/s": round(info["samples_per_second"]),
                "MFU": "" if info.get("mfu") is None else f"{info['mfu']:.1%}",
                info["metric"]["name"]: round(info["metric"]["value"], 4),
                "reader_cost share": f"{info['reader_share']:.1%}",
                "peak MiB": None if info["peak_memory_bytes"] is None else round(info["peak_memory_bytes"] / 2**20),
                "warm-up s": round(info["warmup_s"], 1),
                "1st iter s": round(info.get("first_step_s", 0.0), 1),
                "verdict": info["verdict"],
            }
        )
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


if __name__ == "__main__":
    print(markdown(table(sys.argv[1])))
