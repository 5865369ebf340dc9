"""Where each option's raw value comes from: pytest's command line and ini file, and the environment.

The one place settings are read, for a pytest session and for the ``trainperf`` command alike: the command
finds the rootdir and ini file exactly as pytest run in the same folder would, so both agree on where the
baselines are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pytest

from trainperf.config.options import OPTIONS
from trainperf.config.settings import Settings, build_settings, resolve


def from_pytest(config: pytest.Config, cli: Mapping[str, Any] | None = None) -> Settings:
    """Every option from the config's command line (or ``cli``, by option name), the environment and its
    ini file, in that order; relative paths from its rootdir. SettingError names the source of a bad value."""
    given = cli or {}
    values = {
        name: resolve(
            spec,
            cli=given.get(name, config.getoption(f"trainperf_{name}")),
            environ=os.environ,
            ini=str(config.getini(spec.ini)),
        )
        for name, spec in OPTIONS.items()
    }
    return build_settings(values, config.rootpath)


def for_command(cli: Mapping[str, Any]) -> Settings:
    """The settings a pytest session started in the current folder would resolve, ``cli`` standing for
    its command line."""
    return from_pytest(pytest.Config.fromdictargs({}, []), cli)
