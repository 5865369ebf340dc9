"""Finding Nsight Systems (nsys) and Nsight Compute (ncu): the override variable, then PATH, then the
folders their installers use. Each found binary is reported with its version."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trainperf.child.process_group import run_in_own_group

OVERRIDES = {"nsys": "TRAINPERF_NSYS", "ncu": "TRAINPERF_NCU"}
PROBE_TIMEOUT_S = 60.0  # a --version probe's limit when no profile timeout is given
INSTALL_GLOBS = {  # newest first after sorting; standard install locations of the CUDA toolkit and Nsight
    "nsys": (
        "/usr/local/cuda/bin/nsys",
        "/opt/nvidia/nsight-systems/*/bin/nsys",
        "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
        "/usr/local/cuda-*/bin/nsys",
    ),
    "ncu": (
        "/usr/local/cuda/bin/ncu",
        "/opt/nvidia/nsight-compute/*/ncu",
        "/usr/local/cuda-*/bin/ncu",
    ),
}


class ToolError(RuntimeError):
    """The tool is missing or unusable; the message is the one-line note for the report."""


@dataclass(frozen=True)
class Tool:
    name: str  # "nsys" or "ncu"
    path: Path
    version: str

    def describe(self) -> str:
        return f"{self.name} {self.version} ({self.path})"


def locate(name: str, environ: Mapping[str, str]) -> Path:
    """The binary's path: ``TRAINPERF_NSYS``/``TRAINPERF_NCU``, else PATH, else known install folders."""
    variable = OVERRIDES[name]
    override = environ.get(variable)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ToolError(f"{variable}={override} is not an executable file")
        return path
    on_path = shutil.which(name, path=environ.get("PATH"))
    if on_path:
        return Path(on_path)
    for pattern in INSTALL_GLOBS[name]:
        found = sorted(glob.glob(pattern), reverse=True)
        if found:
            return Path(found[0])
    raise ToolError(f"{name} not found: set {variable} to its path or put it on PATH")


def version(path: Path, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """The version line's last word, e.g. ``2025.3.1.0``; ``unknown`` when it does not print one. The probe
    runs in a group of its own, stopped whole after ``timeout_s``; bytes that are not UTF-8 are replaced."""
    with tempfile.TemporaryFile() as banner:
        try:
            run_in_own_group([str(path), "--version"], timeout_s, stdout=banner, stderr=subprocess.STDOUT)
        except subprocess.TimeoutExpired:
            raise ToolError(f"{path} --version did not answer within {timeout_s:g} s") from None
        except OSError as error:
            raise ToolError(f"{path} --version failed: {error}") from None
        banner.seek(0)
        text = banner.read().decode("utf-8", errors="replace")
    lines = [line for line in text.splitlines() if "version" in line.lower()]
    if not lines:
        return "unknown"
    return lines[-1].split("(")[0].split()[-1]


def find(name: str, environ: Mapping[str, str], timeout_s: float = PROBE_TIMEOUT_S) -> Tool:
    path = locate(name, environ)
    return Tool(name, path, version(path, timeout_s))
