"""Print the test ids of a selection whose baseline entry was not written since a given time.

A recording of the whole suite takes longer than one call of a time-limited GPU machine. Each case is
written as soon as it finishes, so the next call records only what is left:

    ids=$(python3 research/studies/unrecorded_cases.py BASELINE_JSON SINCE perf_tests/test_gpt2.py)
    [ -n "$ids" ] && pytest $ids --update-baselines

SINCE is an ISO time (``2026-11-27T07:30``); an entry counts as recorded when its ``date`` is at or
after it: ``--update-baselines`` writes a case once all its runs are done.
Prints nothing when every case is recorded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

WORKLOAD_OF_TEST = {  # test function -> the workload name its cases are stored under
    "test_bert": "bert",
    "test_digits": "digits",
    "test_gpt2": "gpt2",
    "test_gpt2_memory": "gpt2_medium",
    "test_transpose": "transpose",
    "test_matmul": "matmul",
    "test_resnet": "resnet",
    "test_ddp": "gpt2_ddp",
    "test_ddp_compiled": "gpt2_ddp_compiled",
    "test_sharded": "gpt2_xl",
    "test_lstm_language_model": "lstm_lm",  # the examples
    "test_mlp_mixer": "mlp_mixer",
    "test_hf_llama": "hf_llama",
    "test_timm_resnet": "timm_resnet50",
    "test_my_model": "my_regression",
    "test_denoiser": "denoiser",
    "test_text_classifier": "text_classifier",
}


def case_key(test_id: str) -> str:
    """``perf_tests/test_kernels.py::test_matmul[cublas]`` -> ``matmul/cublas``."""
    function, _, case = test_id.split("::")[-1].partition("[")
    if function not in WORKLOAD_OF_TEST:
        raise SystemExit(f"unrecorded_cases: no workload known for {function} ({test_id})")
    return f"{WORKLOAD_OF_TEST[function]}/{case.rstrip(']')}"


def recorded(baseline_file: Path, since: datetime) -> set[str]:
    """The case keys of ``baseline_file`` recorded at or after ``since``."""
    if not baseline_file.exists():
        return set()
    cases = json.loads(baseline_file.read_text())["cases"]
    return {key for key, entry in cases.items() if datetime.fromisoformat(entry["date"]) >= since}


def collected(selection: list[str]) -> list[str]:
    """The test ids pytest collects for ``selection``."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *selection],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in out.splitlines() if "::" in line]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline_file", type=Path)
    parser.add_argument("since", type=datetime.fromisoformat)
    parser.add_argument("selection", nargs="+")
    args = parser.parse_args(argv)
    since = args.since if args.since.tzinfo else args.since.replace(tzinfo=timezone.utc)
    done = recorded(args.baseline_file, since)
    print(" ".join(test_id for test_id in collected(args.selection) if case_key(test_id) not in done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
