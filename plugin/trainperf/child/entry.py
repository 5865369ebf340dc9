"""A measuring child's entry point (``python -m trainperf.child.entry <pytest args>``): pytest,
then the process ends at once. The measurement is on disk when pytest returns; the interpreter's
teardown that would follow (every module's objects freed, torch's among them) takes about a second and
writes nothing the parent reads."""

from __future__ import annotations

import os
import sys

import pytest


def main() -> None:
    status = pytest.main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(status))


if __name__ == "__main__":
    main()
