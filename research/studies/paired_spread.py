"""Would judging a case against another case of the same session narrow its noise between runs?

    PYTHONPATH=$PWD python research/studies/paired_spread.py

Reads the committed rows of whole-suite runs (acceptance runs, calibration leases, fresh-host runs) and
prints, per case, the spread of its log run medians over runs; divided by its ladder's reference of
the same session; and less the median deviation of the other noisy cases (spread above 3%) of that
session. A machine-wide factor would show as a narrower spread in the last two columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "evidence" / "data"
SOURCES = {"h200-acceptance-runs.csv": "run", "h200-calibration-runs.csv": "lease", "h200-suite-aa.csv": None}
NOISY = 0.03  # a case whose log medians spread more than this counts among the noisy peers


def sessions() -> pd.DataFrame:
    """One row per case and session: case, session key, log median and deviation from the case's mean."""
    frames = []
    for name, column in SOURCES.items():
        rows = pd.read_csv(DATA / name)
        key = rows[column] if column else rows["lease"] + "/" + rows["run"]
        frames.append(pd.DataFrame({"case": rows["case"], "session": name + ":" + key, "ms": rows["median_ms"]}))
    runs = pd.concat(frames, ignore_index=True)
    runs["log"] = np.log(runs["ms"])
    runs["deviation"] = runs["log"] - runs.groupby("case")["log"].transform("mean")
    runs["ladder"] = runs["case"].str.split("/").str[0]
    return runs


def spreads(runs: pd.DataFrame) -> pd.DataFrame:
    """Per case: runs, spread alone, against its reference, against its noisy peers (in %)."""
    alone = runs.groupby("case")["deviation"].std()
    noisy = set(alone[alone > NOISY].index)
    reference = runs[runs["case"].str.endswith("/reference")].set_index(["session", "ladder"])["log"]
    runs = runs.join(reference.rename("reference_log"), on=["session", "ladder"])
    peers = runs[runs["case"].isin(noisy)].groupby("session")["deviation"]
    runs["peer_median"] = [
        peers.get_group(s).drop(index=i, errors="ignore").median() if s in peers.groups else np.nan
        for i, s in zip(runs.index, runs["session"], strict=True)
    ]
    runs["vs_reference"] = runs["log"] - runs["reference_log"]
    runs["vs_noisy_peers"] = runs["deviation"] - runs["peer_median"]
    table = runs.rename(columns={"deviation": "alone"}).groupby("case")
    spread = 100 * table[["alone", "vs_reference", "vs_noisy_peers"]].std()
    return spread.round(2).assign(runs=table.size())


if __name__ == "__main__":
    print(spreads(sessions()).to_string())
