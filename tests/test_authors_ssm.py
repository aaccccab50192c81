"""``lra.bench.authors_ssm``'s weight copy, without the authors' code: our s4d stands in for theirs."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import attention_zoo
from lra.bench.authors_ssm import REFERENCES, copy_weights


def s4d_pair() -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    make = lambda: attention_zoo.build_attention("s4d", dim=4, seq_len=8, d_state=4, bidirectional=False)  # noqa: E731
    return make(), make()


# S4Block's mapping, with our own names on the other side: C conjugated, their B left as it is
STAND_IN = dataclasses.replace(REFERENCES[1], names={name: name for name in REFERENCES[1].names}, fixed=())


@pytest.mark.parametrize("from_ours", [True, False])
def test_the_copy_moves_every_source_weight_off_its_start_then_copies_it(from_ours):
    ours, theirs = s4d_pair()
    source, target = (ours, theirs) if from_ours else (theirs, ours)
    before = {name: p.detach().clone() for name, p in source.named_parameters()}
    weights = copy_weights(ours, theirs, STAND_IN, from_ours)
    mine, yours = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert all(mine[name] is w for name, w in zip(STAND_IN.names, weights[0], strict=True))
    assert all(yours[name] is w for name, w in zip(STAND_IN.names, weights[1], strict=True))
    for (name, moved), copied in zip(source.named_parameters(), target.parameters(), strict=True):
        assert not torch.equal(moved, before[name]), name  # A's parts start equal in both
        sign = torch.tensor([1.0, -1.0]) if name == "kernel.C" else 1.0
        torch.testing.assert_close(copied, moved * sign, rtol=0, atol=0)


def test_a_weight_without_a_counterpart_is_named():
    ours, theirs = s4d_pair()
    missing = dataclasses.replace(STAND_IN, names={k: v for k, v in STAND_IN.names.items() if k != "D"})
    with pytest.raises(ValueError, match=r"no counterpart for \['D'\]"):
        copy_weights(ours, theirs, missing, from_ours=True)
