"""The knobs that change nothing in a case's training are named, with why (``steps.unapplied_knobs``)."""

import itertools

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from trainperf import Optimization, Training, loader_settings
from trainperf.measure.steps import unapplied_knobs

CPU, CUDA = torch.device("cpu"), torch.device("cuda")  # CUDA is named only: nothing runs on it here


def _training(model: nn.Module, batches: object) -> Training:
    return Training(model, None, batches, lambda m, b: m(b[0]).sum(), lambda m: 0.0, 8)  # type: ignore[arg-type]


def _loader(**settings: object) -> DataLoader[tuple[torch.Tensor, ...]]:
    return DataLoader(TensorDataset(torch.zeros(16, 4)), batch_size=8, **settings)  # type: ignore[arg-type]


def test_workers_asked_of_batches_that_are_no_dataloader_are_named() -> None:
    generator = (batch for batch in itertools.repeat((torch.zeros(8, 4),)))
    workers = Optimization("workers", num_workers=2, pin_memory=True)
    found = unapplied_knobs(_training(nn.Linear(4, 1), generator), CUDA, workers)
    assert found == [
        "num_workers=2, pin_memory=True not applied: the batches are a generator, not a DataLoader built with "
        "loader_settings(optimization, device)"
    ]
    # on the CPU pinned memory is no knob (loader_settings drops it): only the workers are named
    assert unapplied_knobs(_training(nn.Linear(4, 1), generator), CPU, workers)[0].startswith("num_workers=2 not")


def test_a_dataloader_built_without_the_case_s_settings_is_named_and_one_built_with_them_is_not() -> None:
    workers = Optimization("workers", num_workers=2)
    found = unapplied_knobs(_training(nn.Linear(4, 1), _loader()), CPU, workers)
    assert found == [
        "num_workers=2 not applied: the DataLoader was built with num_workers=0; build it with "
        "loader_settings(optimization, device)"
    ]
    built = _loader(**loader_settings(workers, CPU))
    assert unapplied_knobs(_training(nn.Linear(4, 1), built), CPU, workers) == []
    assert unapplied_knobs(_training(nn.Linear(4, 1), _loader()), CPU, Optimization("reference")) == []


def test_channels_last_on_a_model_without_a_4d_weight_is_named() -> None:
    layout = Optimization("channels_last", channels_last=True)
    mlp = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    assert unapplied_knobs(_training(mlp, _loader()), CPU, layout) == [
        "channels_last changes nothing: the model has no 4-D weight to lay out"
    ]
    assert unapplied_knobs(_training(nn.Conv2d(3, 4, 3), _loader()), CPU, layout) == []


def test_knobs_that_need_another_knob_are_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"graphs: compile_mode='reduce-overhead' is torch.compile's: set compile"):
        Optimization("graphs", compile_mode="reduce-overhead")
    with pytest.raises(ValueError, match="scaled: grad_scaler scales the loss of a reduced-precision autocast"):
        Optimization("scaled", grad_scaler=True)
    Optimization("graphs", compile=True, compile_mode="reduce-overhead")
    Optimization("scaled", amp_dtype="float16", grad_scaler=True)


def test_a_misspelled_knob_is_named_with_the_nearest_one_and_where_workload_knobs_go() -> None:
    with pytest.raises(TypeError, match=r"Optimization has no knob 'amp_dtyp': did you mean 'amp_dtype'\? "):
        Optimization("amp", amp_dtyp="bfloat16")
    with pytest.raises(TypeError, match=r"no knob 'hidden_width': \(a knob only your workload reads goes in options="):
        Optimization("wide", hidden_width=96)
    assert Optimization("amp", amp_dtype="bfloat16").amp_dtype == "bfloat16"
