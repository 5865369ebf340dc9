"""Print Markdown tables of a run document: the cases, or with --profiles each case's profile cost and
its Top-5 with roofline.

    python ci/run_table.py perf-report/run.json [--profiles]
"""

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


def profile_tables(path: str) -> str:
    """Per profiled case: tool, cost, bottleneck verdict, and its Top-5 with roofline columns."""
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    parts = []
    for bench in document["benchmarks"]:
        found = bench["extra_info"].get("profile")
        if not found:
            continue
        if found["error"]:
            parts.append(f"**{bench['name']}**: no profile ({found['error']})")
            continue
        verdict = found["bottleneck"]
        heading = f"**{bench['name']}**: {found['tool']}, {found['seconds']:.0f} s to profile, iteration "
        heading += f"{found['iteration_ms']:.2f} ms"
        heading += f"; {verdict['verdict']}: {verdict['reason']}" if verdict else ""
        rows = [
            {
                "kernel": row["short"][:60],
                "phase": row["phase"],
                "calls": row["calls"],
                "ms": round(row["total_ms"], 3),
                "share": f"{row['share']:.1%}",
                "precision": (row.get("precision") or "") + (" TC" if row.get("tensor_cores") else ""),
                "FLOP/B": "" if row.get("intensity") is None else f"{row['intensity']:.3g}",
                "bound": row.get("bound") or "",
                "% of roof": "" if row.get("roof_share") is None else f"{row['roof_share']:.0%}",
                "reason": row.get("reason") or "",
            }
            for row in found["top"]
        ]
        parts.append(heading + "\n\n" + markdown(pd.DataFrame(rows)))
    return "\n\n".join(parts)


if __name__ == "__main__":
    if "--profiles" in sys.argv[2:]:
        print(profile_tables(sys.argv[1]))
    else:
        print(markdown(table(sys.argv[1])))
