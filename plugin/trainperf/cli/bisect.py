"""``trainperf bisect``: the first commit at which a case asks for more work than its baseline entry
recorded, found by ``git bisect run`` in a scratch worktree (the user's checkout, branch and index are
never touched, on Ctrl-C or an error too).

Each step runs the one case in a fresh pytest process in the scratch checkout, judged against the
baseline entry in the user's own baseline folder; the work counts are exact, so one run decides a step,
on the CPU too where the count moves there. A step where the case does not exist, errors or is not
judged on its work is skipped (``git bisect skip``) with its reason, never guessed. GOOD defaults to the
commit the case's baseline entry was recorded at, BAD to ``HEAD``.

This module is also the step ``git bisect run`` calls: ``python -m trainperf.cli.bisect step ...``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trainperf.judge.checks import CheckName
from trainperf.record.document import RunDocument, RunDocumentError, load
from trainperf.record.reading import baseline_file, read_baselines
from trainperf.store.locked_file import atomic_write

FOUND, NOT_FOUND, UNDECIDED = 0, 1, 3  # the command's exit statuses (2: a usage or file error)
GOOD, BAD, SKIP = 0, 1, 125  # what a step tells git bisect run


@dataclass(frozen=True)
class Step:
    """One commit judged: ``good``, ``bad`` or ``skip``, why, and how long its run took."""

    commit: str
    outcome: str
    detail: str
    seconds: float
    case: str | None = None


@dataclass
class Outcome:
    """What a bisection found: the first bad commit (None where it found none or could not decide)."""

    node: str
    good: str
    bad: str
    status: int
    steps: list[Step] = field(default_factory=list)
    first_bad: dict[str, str] | None = None
    reason: str = ""

    @property
    def moved(self) -> str | None:
        """What the first bad commit's step said moved (its work check's message)."""
        found = self.first_bad or {}
        return next((step.detail for step in self.steps if step.commit == found.get("commit")), None)

    @property
    def case(self) -> str | None:
        return next((step.case for step in self.steps if step.case), None)

    @property
    def seconds(self) -> float:
        return round(sum(step.seconds for step in self.steps), 1)

    def as_dict(self) -> dict[str, Any]:
        """The outcome as ``--json`` prints it: the text's figures, the steps' count and time included."""
        steps = [asdict(step) for step in self.steps]
        return {**asdict(self), "moved": self.moved, "step_count": len(steps), "seconds": self.seconds, "steps": steps}


class BisectError(Exception):
    """A bisection that cannot start: no git checkout, no baseline entry to start from, a bad revision."""


def bisect(
    node: str, good: str | None, bad: str, baseline_dir: Path, device: str, budget_s: float | None = None
) -> Outcome:
    """Bisect ``node`` between ``good`` (default: its baseline entry's commit) and ``bad``, stopping
    undecided once ``budget_s`` seconds have passed."""
    deadline = None if budget_s is None else time.monotonic() + budget_s
    root = Path(_git("rev-parse", "--show-toplevel", cwd=Path.cwd()))
    bad_commit = _git("rev-parse", "--verify", f"{bad}^{{commit}}", cwd=root)
    with tempfile.TemporaryDirectory(prefix="trainperf-bisect-") as scratch_dir:
        scratch, log = Path(scratch_dir) / "checkout", Path(scratch_dir) / "steps.jsonl"
        try:  # the worktree's own creation inside: an interrupt while git makes it still removes it
            _git("worktree", "add", "--detach", "--quiet", str(scratch), bad_commit, cwd=root)
            node_in_scratch = _relative_node(node, root)
            step_command = [sys.executable, "-m", "trainperf.cli.bisect", "step", str(log), node_in_scratch,
                            str(baseline_dir.resolve()), device]  # fmt: skip
            first = _step(step_command, scratch, log)
            if first.outcome == "skip" and first.case is None:
                raise BisectError(f"{node}: pytest ran no such case at {bad_commit[:9]} ({first.detail})")
            if first.outcome != "bad":
                why = "its work at BAD is as recorded" if first.outcome == "good" else first.detail
                return Outcome(node, good or "", bad_commit, NOT_FOUND, [first], reason=why)
            start = good or _recorded_commit(first.case, baseline_dir, device)
            good_commit = _git("rev-parse", "--verify", f"{start}^{{commit}}", cwd=root)
            if good is not None:  # a commit the user named: judged, as git bisect would take it on trust
                _git("checkout", "--quiet", "--detach", good_commit, cwd=scratch)
                checked = _step(step_command, scratch, log)
                if checked.outcome == "bad":
                    raise BisectError(
                        f"GOOD {good_commit[:9]} is not good: {checked.detail}. Each step is judged against the "
                        "baseline entry: give a commit whose work is as recorded, or record the case again there"
                    )
            _git("bisect", "start", bad_commit, good_commit, cwd=scratch)
            try:
                left = None if deadline is None else max(1.0, deadline - time.monotonic())
                run = ["git", "bisect", "run", *step_command]
                ran = subprocess.run(run, cwd=scratch, capture_output=True, text=True, timeout=left)
            except subprocess.TimeoutExpired:
                steps = [first, *_read_steps(log)]
                return Outcome(node, good_commit, bad_commit, UNDECIDED, steps, reason="out of time")
            steps = [first, *_read_steps(log)]
            outcome = Outcome(node, good_commit, bad_commit, UNDECIDED, steps)
            if "is the first bad commit" in ran.stdout:
                culprit = _git("rev-parse", "refs/bisect/bad", cwd=scratch)
                outcome.status, outcome.first_bad = FOUND, _described(culprit, root)
            else:
                outcome.reason = _undecided(ran.stdout + ran.stderr)
            return outcome
        finally:
            subprocess.run(["git", "bisect", "reset", "--quiet"], cwd=scratch, capture_output=True)
            remove = ["git", "worktree", "remove", "--force", "--force", str(scratch)]  # twice: locked while made
            subprocess.run(remove, cwd=root, capture_output=True)
            subprocess.run(["git", "worktree", "prune"], cwd=root, capture_output=True)


def _step(command: list[str], cwd: Path, log: Path) -> Step:
    """Judge the scratch checkout's commit once, as ``git bisect run`` would, and read back its step."""
    subprocess.run(command, cwd=cwd, capture_output=True)
    steps = _read_steps(log)
    log.unlink()
    return steps[-1]


def _read_steps(log: Path) -> list[Step]:
    if not log.exists():
        return []
    return [Step(**json.loads(line)) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def _recorded_commit(case: str | None, baseline_dir: Path, device: str) -> str:
    """The commit the case's baseline entry was recorded at: where a bisection starts by default."""
    path = baseline_file(baseline_dir, device)
    entry = read_baselines(path).get(case or "")
    if not entry or not entry.get("commit"):
        raise BisectError(f"{path}: no commit recorded for {case}: give the GOOD commit")
    return str(entry["commit"])


def _relative_node(node: str, root: Path) -> str:
    """The node id from the checkout's top: the scratch checkout is a copy of it elsewhere."""
    path, sep, rest = node.partition("::")
    absolute = (Path.cwd() / path).resolve()
    try:
        return str(absolute.relative_to(root.resolve())) + sep + rest
    except ValueError:
        raise BisectError(f"{node}: not a test of the git checkout at {root}") from None


def _described(commit: str, root: Path) -> dict[str, str]:
    fields = _git("show", "-s", "--format=%H%x00%s%x00%an%x00%aI", commit, cwd=root).split("\0")
    return dict(zip(("commit", "subject", "author", "date"), fields, strict=True))


def _undecided(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    skipped = next((line for line in lines if "only 'skip'ped commits left" in line), None)
    return skipped or (lines[-1] if lines else "git bisect run ended without a first bad commit")


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise BisectError(f"git {' '.join(args)}: {said[-1] if said else f'exit status {done.returncode}'}")
    return done.stdout.strip()


def judge_step(log: Path, node: str, baseline_dir: str, device: str) -> int:
    """One step of ``git bisect run``: run the case here, judge its work, append the step to ``log``."""
    commit = _git("rev-parse", "HEAD", cwd=Path.cwd())
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="trainperf-step-") as report:
        command = [sys.executable, "-m", "pytest", node, "-q", "-p", "no:cacheprovider", f"--perf-device={device}",
                   f"--baseline-dir={baseline_dir}", f"--perf-report={report}"]  # fmt: skip
        ran = subprocess.run(command, capture_output=True, text=True)
        outcome, detail, case = _judged(Path(report) / "run.json", ran.stdout + ran.stderr)
    step = Step(commit, outcome, detail, round(time.monotonic() - started, 1), case)
    with log.open("a", encoding="utf-8") as file:
        file.write(json.dumps(asdict(step)) + "\n")
    return {"good": GOOD, "bad": BAD}.get(outcome, SKIP)


def _judged(run_file: Path, output: str) -> tuple[str, str, str | None]:
    """(outcome, detail, case) of a step's run: its work check, else why it cannot say."""
    try:
        document = load(run_file)
    except RunDocumentError:
        tail = [line for line in output.splitlines() if line.strip()][-1:] or ["no output"]
        return "skip", f"pytest wrote no run.json: {tail[0]}", None
    if not document.cases:
        stopped = document.unfinished[0] if document.unfinished else None
        why = f"{stopped['verdict']}: {stopped['reason']}" if stopped else "the case was not collected here"
        return "skip", why, None if stopped is None else stopped["name"]
    case = document.cases[0]
    work = next((c for c in case["extra_info"]["checks"] if c["name"] == CheckName.WORK), None)
    if work is None or work["passed"] is None:
        return "skip", "its work was not judged" + (f": {work['message']}" if work else ""), case["name"]
    return ("good" if work["passed"] else "bad"), work["message"], case["name"]


def failed_nodes(document: RunDocument) -> list[str]:
    """The node ids of a run's cases that failed their work check: what a night bisects."""
    return [
        case["fullname"]
        for case in document.cases
        if any(c["name"] == CheckName.WORK and c["passed"] is False for c in case["extra_info"]["checks"])
    ]


def culprit(outcome: Outcome) -> dict[str, Any]:
    """A bisection as run.json keeps it (``culprits``): the case, what moved, where, at what cost."""
    found, case, moved = outcome.first_bad or {}, outcome.case, outcome.moved
    return {
        "case": case,
        "node": outcome.node,
        "found": outcome.first_bad is not None,
        **{key: found.get(key) for key in ("commit", "subject", "author", "date")},
        "moved": None if moved is None or case is None else moved.removeprefix(f"{case}: "),
        "reason": outcome.reason,
        "steps": len(outcome.steps),
        "seconds": outcome.seconds,
    }


def bisect_run(
    run_file: Path, good: str, bad: str, baseline_dir: Path, device: str, budget_s: float
) -> list[dict[str, Any]]:
    """Bisect every case of a run that failed on its work, within ``budget_s`` seconds for them all,
    between ``good`` (the last green night's commit) and ``bad``; the culprits go into the run document."""
    document = load(run_file)
    deadline = time.monotonic() + budget_s
    culprits = []
    for node in failed_nodes(document):
        left = deadline - time.monotonic()
        if left <= 0:
            culprits.append({"node": node, "found": False, "reason": "out of time before it started"})
            continue
        culprits.append(culprit(bisect(node, good, bad, baseline_dir, device, budget_s=left)))
    atomic_write(run_file, json.dumps({**document.data, "culprits": culprits}, indent=2))
    return culprits


def text(outcome: Outcome) -> list[str]:
    """The bisection as the terminal shows it."""
    lines = [f"trainperf bisect: {outcome.node}: good {outcome.good[:9] or '?'}, bad {outcome.bad[:9]}"]
    lines += [f"  {s.commit[:9]} {s.outcome} ({s.seconds:.0f} s): {s.detail}" for s in outcome.steps]
    if outcome.first_bad is not None:
        culprit = outcome.first_bad
        lines.append(f"first bad commit: {culprit['commit'][:9]} '{culprit['subject']}' ({culprit['author']}, "
                     f"{culprit['date'][:10]})")  # fmt: skip
        if outcome.moved is not None:
            lines.append(f"  there: {outcome.moved}")
    else:
        lines.append(("not found: " if outcome.status == NOT_FOUND else "could not decide: ") + outcome.reason)
    lines.append(f"{len(outcome.steps)} steps, {outcome.seconds:.0f} s")
    return lines


def main(argv: Sequence[str]) -> int:
    """``python -m trainperf.cli.bisect step LOG NODE BASELINE_DIR DEVICE``: one step of git bisect run."""
    parser = argparse.ArgumentParser(prog="python -m trainperf.cli.bisect")
    parser.add_argument("what", choices=["step"])
    parser.add_argument("log", type=Path)
    parser.add_argument("node")
    parser.add_argument("baseline_dir")
    parser.add_argument("device")
    args = parser.parse_args(argv)
    return judge_step(args.log, args.node, args.baseline_dir, args.device)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
