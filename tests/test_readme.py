"""The docs a user reads are what the code does: the README's summary is what the summary prints, its own
model is the example file CI runs (typed for ``mypy --strict``), and the options page is the options
module's table."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from trainperf.config.options import options_page
from trainperf.report.terminal import cases_text

ROOT = Path(__file__).parent.parent
# `pytest examples --update-baselines`, then `pytest examples --perf-report=DIR` on a two-core CPU machine
EXAMPLES_RUN = Path(__file__).parent / "data" / "cpu_examples.run.json"
OWN_MODEL = ROOT / "examples" / "test_my_model.py"


def fenced_block_after(text: str, heading: str) -> str:
    """The first fenced code block after ``heading``, without its fences."""
    after = text.split(heading, 1)[1]
    opening = after.index("```")
    body_start = after.index("\n", opening) + 1
    return after[body_start : after.index("```", body_start)].rstrip("\n")


def test_the_summary_example_is_what_the_summary_prints_for_that_run() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    cases = json.loads(EXAMPLES_RUN.read_text(encoding="utf-8"))["benchmarks"]
    expected = cases_text([case for case in cases if case["name"].startswith("mlp_mixer/")])
    shown = fenced_block_after(readme, "# pytest-trainperf")
    assert shown == expected, f"README's summary example is stale; the summary prints:\n{expected}"


def test_the_options_page_is_the_options_table() -> None:
    page = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    assert page == options_page(), "docs/options.md is stale: python -m trainperf.config.options > docs/options.md"


def test_the_readmes_own_model_is_the_example_file_of_at_most_40_lines() -> None:
    shown = fenced_block_after((ROOT / "README.md").read_text(encoding="utf-8"), "## Add your own model")
    assert shown + "\n" == OWN_MODEL.read_text(encoding="utf-8")
    assert len(shown.splitlines()) <= 40


@pytest.mark.slow
def test_a_users_test_file_type_checks_strictly_against_the_installed_wheel(tmp_path: Path) -> None:
    """The README's model, checked as a user's project checks it: ``mypy --strict`` outside the checkout,
    against the plugin installed from its wheel (typed by its py.typed, not by the checkout's mypy setup)."""
    run = functools.partial(subprocess.run, capture_output=True, text=True, check=True)
    source = tmp_path / "source"  # built from a copy: a build leaves build/ and egg-info where it runs
    shutil.copytree(ROOT / "plugin", source / "plugin", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path, source])
    (wheel,) = tmp_path.glob("*.whl")
    assert "trainperf/py.typed" in zipfile.ZipFile(wheel).namelist()
    venv = tmp_path / "venv"  # sees torch and mypy where they are installed; trainperf from the wheel, first
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv])
    python = venv / "bin" / "python"
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", site, wheel])
    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(OWN_MODEL, user / OWN_MODEL.name)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-executable", python, OWN_MODEL.name],
        cwd=user,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_bytes()) <= 12_000
