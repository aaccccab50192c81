"""The s4d options that ``experiment=s4`` sets to train as the S4 repository's layer: the two directions
sharing dt and A (``shared_directions``), C's own rate (``c_lr``) and the elementwise dropout before
the GELU (``conv_dropout``); each is off by default."""

from __future__ import annotations

import torch
from conftest import compose_config

import attention_zoo
from lra.model.module import parameter_groups

DIM, LENGTH, D_STATE = 8, 40, 6


def s4d(**options) -> torch.nn.Module:
    torch.manual_seed(0)
    return attention_zoo.build_attention("s4d", dim=DIM, seq_len=LENGTH, d_state=D_STATE, **options)


def test_shared_directions_hold_one_dt_and_A_and_two_C():
    kernel = s4d(shared_directions=True).kernel
    shapes = {name: tuple(p.shape) for name, p in kernel.named_parameters()}
    modes = D_STATE // 2
    assert shapes == {
        "C": (2 * DIM, modes, 2),
        "log_dt": (DIM,),
        "log_A_real": (DIM, modes),
        "A_imag": (DIM, modes),
    }


def test_shared_directions_equal_two_ssms_with_the_same_dt_and_A():
    """The independent form with each direction's dt and A set to the shared ones computes the same."""
    shared, independent = s4d(shared_directions=True), s4d()
    state = {name: p.detach() for name, p in shared.named_parameters()}
    with torch.no_grad():
        for name, parameter in independent.named_parameters():
            value = state[name]
            parameter.copy_(
                torch.cat([value, value])
                if name.split(".")[-1] in ("log_dt", "log_A_real", "A_imag")
                else value
            )
    x = torch.randn(3, LENGTH, DIM)
    mask = torch.arange(LENGTH)[None, :] < torch.tensor([LENGTH, 25, 3])[:, None]
    torch.testing.assert_close(shared(x, mask), independent(x, mask))
    assert not torch.allclose(shared(x, mask), s4d()(x, mask))  # the default draws its own second SSM


def test_c_lr_trains_C_at_its_rate_with_the_runs_weight_decay():
    model = s4d(c_lr=2e-3, lr=1e-3)
    assert model.kernel.C._optim == {"lr": 2e-3}
    groups = parameter_groups(model)
    (c_group,) = [group for group in groups if any(p is model.kernel.C for p in group["params"])]
    assert c_group == {"params": [model.kernel.C], "lr": 2e-3}  # no weight_decay: AdamW's, the run's
    assert not hasattr(s4d().kernel.C, "_optim")


def test_conv_dropout_drops_single_entries_before_the_gelu():
    model = s4d(conv_dropout=0.5).train()
    dropped = []
    model.conv_dropout.register_forward_hook(lambda module, inputs, out: dropped.append(out) and None)
    model(torch.randn(2, LENGTH, DIM))
    zeros = dropped[0] == 0  # (B, dim, L)
    assert 0.3 < zeros.float().mean() < 0.7
    assert (zeros.any(-1) & ~zeros.all(-1)).any()  # not whole channels: untied over positions
    x = torch.randn(2, LENGTH, DIM)
    torch.testing.assert_close(model.eval()(x), s4d().eval()(x))  # nothing in evaluation


def test_the_defaults_keep_the_independent_directions():
    cfg = compose_config(["task=listops", "attention=s4d"]).attention
    assert (cfg.c_lr, cfg.shared_directions, cfg.conv_dropout) == (None, False, 0.0)
    assert isinstance(s4d().conv_dropout, torch.nn.Identity)
