"""What torch.compile did for a case, read from dynamo's own records (its counters and its compilation
metrics): the graphs it built, its graph breaks with their reason and the user's line they split at,
its recompilations with the guard that failed, and the seconds it spent. The same code compiles the
same way on any host, so a rise is a change of the code or of torch: a ``print`` or ``.item()`` in
``forward`` that splits a graph in three, or an argument that fails a guard every step.

Read only where dynamo was loaded (importing it costs a second): a case that compiled nothing has none."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

RESUMED = re.compile(r"torch_dynamo_resume_in_(?P<function>.+)_at_(?P<line>\d+)$")  # where dynamo resumes
SHOWN = 200  # characters of a reason kept: dynamo's explanations run to paragraphs


def start() -> None:
    """Forget what earlier cases of this process compiled (``torch._dynamo.reset`` leaves the counters)."""
    if "torch._dynamo" in sys.modules:
        from torch._dynamo.utils import clear_compilation_metrics, counters

        counters.clear()
        clear_compilation_metrics()


def read() -> dict[str, Any] | None:
    """The case's compile counts since ``start``; None where nothing was compiled."""
    if "torch._dynamo" not in sys.modules:
        return None
    from torch._dynamo.utils import counters, get_compilation_metrics

    frames = list(get_compilation_metrics())
    if not frames:
        return None
    breaks = [_site(frame) for frame in frames if _attempt(frame) == 0 and RESUMED.match(frame.co_name or "")]
    recompiled = [frame for frame in frames if _attempt(frame) > 0]
    return {
        "graphs": int(counters["stats"]["unique_graphs"]),
        "graph_breaks": sum(counters["graph_break"].values()),
        "recompiles": len(recompiled),
        "compile_s": round(sum(frame.entire_frame_compile_time_s or 0.0 for frame in frames), 3),
        "break_sites": sorted(breaks),
        "break_reasons": sorted({_first_lines(reason) for reason in counters["graph_break"]}),
        "recompile_reasons": [_first_lines(frame.recompile_reason or "") for frame in recompiled],
    }


def _attempt(frame: Any) -> int:
    """Which compilation of its frame this was: 0 the first, more a recompilation (compile id 'frame/attempt')."""
    return int(str(frame.compile_id).rsplit("/", 1)[-1])


def _site(frame: Any) -> str:
    """'model.py:42 in forward': the user's line a graph break split the function at."""
    found = RESUMED.match(frame.co_name)
    assert found is not None
    return f"{Path(frame.co_filename or '?').name}:{found['line']} in {found['function']}"


def _first_lines(text: str) -> str:
    """A reason on one line: its first line, with the explanation dynamo gives under it."""
    lines = [" ".join(line.split()) for line in text.strip().splitlines() if line.strip()]
    kept = [lines[0], *(line for line in lines[1:2] if line.startswith("Explanation:"))] if lines else []
    joined = ": ".join(kept).replace("Explanation: ", "")
    return joined if len(joined) <= SHOWN else joined[: SHOWN - 3] + "..."
