"""Time GELU's backward pass through the down-projection at GPT-2's size, three ways, to choose one:

    python research/experiments/gelu_epilogue.py [--tokens 32768] [--width 768]

- the stack's: the GEMM ``dy @ W_down`` (PyTorch), then the Triton kernel writing GELU's gradient and
  the bias gradient (custom_kernels/fused_gelu.py);
- cuBLASLt's ``DGELU`` epilogue (GELU's gradient applied in that GEMM, reading the saved
  pre-activation), then the bias gradient as a sum over the tokens;
- cuBLASLt's ``DGELU_BGRAD`` (the bias gradient in the epilogue too).

Each cuBLASLt epilogue is timed with every algorithm its heuristic offers; each result is checked
against the stack's.
"""

from __future__ import annotations

import argparse
import functools

import torch

from custom_kernels.cublaslt import algorithm_count, gemm_with_epilogue
from custom_kernels.cublaslt_epilogues import linear_gelu_saving_input
from custom_kernels.fused_gelu import gelu_backward_and_bias_grad
from research.experiments.gemm_algorithms import milliseconds

EPILOGUE_DGELU = 64 | 128  # cublasLt.h: CUBLASLT_EPILOGUE_DGELU, with the auxiliary-input bit
EPILOGUE_DGELU_BGRAD = EPILOGUE_DGELU | 16


def stack_way(dy: torch.Tensor, w_down: torch.Tensor, pre: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return gelu_backward_and_bias_grad(dy @ w_down, pre)


def dgelu(
    dy: torch.Tensor, w_down: torch.Tensor, pre: torch.Tensor, algorithm: int
) -> tuple[torch.Tensor, torch.Tensor]:
    grad_pre = gemm_with_epilogue(w_down, dy, (False, False), EPILOGUE_DGELU, aux=pre, algorithm=algorithm)
    return grad_pre, grad_pre.sum(0, dtype=torch.float32)


def dgelu_bgrad(
    dy: torch.Tensor, w_down: torch.Tensor, pre: torch.Tensor, algorithm: int
) -> tuple[torch.Tensor, torch.Tensor]:
    bias_grad = torch.empty(pre.shape[1], dtype=pre.dtype, device=pre.device)
    grad_pre = gemm_with_epilogue(w_down, dy, (False, False), EPILOGUE_DGELU_BGRAD, bias_grad, pre, algorithm)
    return grad_pre, bias_grad


def relative_error(ours: torch.Tensor, reference: torch.Tensor) -> float:
    return float(((ours.float() - reference.float()).norm() / reference.float().norm()).item())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=32768)
    parser.add_argument("--width", type=int, default=768)
    args = parser.parse_args()
    torch.manual_seed(0)

    def bf16(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)

    hidden = 4 * args.width
    x, w_up, b_up = bf16(args.tokens, args.width), bf16(hidden, args.width) / args.width**0.5, bf16(hidden)
    w_down, dy = bf16(args.width, hidden) / hidden**0.5, bf16(args.tokens, args.width)
    _, pre = linear_gelu_saving_input(x, w_up, b_up)
    expected_grad, expected_bias = stack_way(dy, w_down, pre)
    gemm_ms, stack_ms = milliseconds(lambda: dy @ w_down), milliseconds(lambda: stack_way(dy, w_down, pre))
    print(f"stack: GEMM {gemm_ms:.4f} ms, with the Triton kernel {stack_ms:.4f} ms")
    print(f"bias gradient as a sum alone: {milliseconds(lambda: expected_grad.sum(0, dtype=torch.float32)):.4f} ms")
    for name, way, epilogue in (("DGELU", dgelu, EPILOGUE_DGELU), ("DGELU_BGRAD", dgelu_bgrad, EPILOGUE_DGELU_BGRAD)):
        for algorithm in range(algorithm_count(w_down, dy, (False, False), epilogue)):
            run = functools.partial(way, dy, w_down, pre, algorithm)
            try:
                grad, bias = run()
            except RuntimeError as error:
                print(f"{name} algorithm {algorithm}: {error}")
                continue
            gemm = functools.partial(gemm_with_epilogue, w_down, dy, (False, False), epilogue, algorithm=algorithm)
            alone = milliseconds(functools.partial(gemm, aux=pre, bias=None if epilogue == EPILOGUE_DGELU else bias))
            errors = f"{relative_error(grad, expected_grad):.1e}, {relative_error(bias, expected_bias):.1e}"
            total = milliseconds(run)
            print(
                f"{name} algorithm {algorithm}: {total:.4f} ms, GEMM alone {alone:.4f} ms, errors {errors}", flush=True
            )


if __name__ == "__main__":
    main()
