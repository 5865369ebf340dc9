"""Throughput as text a reader takes in at a glance."""

from __future__ import annotations

PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"))


def rate_text(per_second: float, unit: str) -> str:
    """``per_second`` of ``unit`` with thousands separators, or with an SI prefix from a million up:
    ``92,461 tokens``, ``2.74 T bytes``, ``51.7 T FLOP``."""
    for scale, prefix in PREFIXES:
        if per_second >= scale:
            return f"{per_second / scale:.3g} {prefix} {unit}"
    return f"{per_second:,.0f} {unit}"
