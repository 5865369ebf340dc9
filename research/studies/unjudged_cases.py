"""Print the test ids of a selection that a strict run, split over several calls, has not judged yet.

A strict run of the whole suite takes longer than one call of a time-limited GPU machine. Each call
leaves run documents; the next call judges only what is left:

    ids=$(python3 research/studies/unjudged_cases.py '.trust/reports/aa1-*/run.json' perf_tests/test_gpt2.py)
    [ -n "$ids" ] && pytest $ids --perf-strict

A case counts as judged when a document holds its measurement, or names it as failed, errored or out
of time. A case that waited for its second measurement when its session stopped ("unjudged"), or that
the stop cut off ("interrupted"), is judged again, and said so on standard error. Prints nothing when
every case is judged.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path

import trainperf

from research.studies.unrecorded_cases import case_key, collected

# the verdicts of a case its session's stop left without a verdict: held for its second measurement, or
# cut off while it ran
AGAIN = ("not judged", "unjudged", "interrupted")  # "unjudged": how older documents spelled "not judged"


def judged(paths: list[Path]) -> set[str]:
    """The case keys the run documents ``paths`` judged; a case they left without a verdict, and judged in
    none, is named on stderr."""
    done: set[str] = set()
    waited: dict[str, str] = {}
    for path in paths:
        done |= set(trainperf.read_run(path)["case"])  # checked against the run document's schema
        for case in json.loads(path.read_text(encoding="utf-8")).get("unfinished", []):
            if case["verdict"] in AGAIN:
                verdict = "not judged" if case["verdict"] == "unjudged" else case["verdict"]
                waited[case["name"]] = f"{verdict} in {path} ({case['reason']})"
            else:
                done.add(case["name"])
    for name, where in waited.items():
        if name not in done:
            print(f"unjudged_cases: {name} {where}: judged again", file=sys.stderr)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("documents", help="a glob of the run's run.json files so far (quoted)")
    parser.add_argument("selection", nargs="+")
    args = parser.parse_args(argv)
    done = judged(sorted(Path(path) for path in glob.glob(args.documents)))
    print(" ".join(test_id for test_id in collected(args.selection) if case_key(test_id) not in done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
