"""The dtype a linear layer computes in, which every custom GEMM must match."""

from __future__ import annotations

import torch


def linear_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype autocast gives a linear layer reading ``x`` here (``x``'s own without autocast)."""
    device = x.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype
