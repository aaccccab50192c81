"""The fidelity benchmark's inputs from a trained model: the Q, K, V (and mask) that reach each
attention core of a harness checkpoint on a batch of its task's validation data, truncated to a length.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

import attention_zoo
from lra.bench.fidelity_measure import QKV
from lra.summary_json import SUMMARY_FILE


def capture_core_inputs(
    model: torch.nn.Module, run_model: Callable[[], object]
) -> list[tuple[QKV, torch.Tensor | None]]:
    """(q, k, v) and mask reaching each attention core of ``model`` during ``run_model()``, in call order."""
    captured: list[tuple[QKV, torch.Tensor | None]] = []

    def hook(module: torch.nn.Module, args: tuple) -> None:
        q, k, v, *rest = args
        captured.append(((q.detach(), k.detach(), v.detach()), rest[0] if rest else None))

    handles = [
        layer.core.register_forward_pre_hook(hook)
        for layer in model.modules()
        if isinstance(layer, attention_zoo.MultiHeadSelfAttention)
    ]
    if not handles:
        raise ValueError(
            "the model has no attention_zoo.MultiHeadSelfAttention layer to capture Q, K, V from"
        )
    try:
        with torch.no_grad():
            run_model()
    finally:
        for handle in handles:
            handle.remove()
    return captured


def run_config(checkpoint: Path) -> dict:
    """The resolved config of the run that wrote ``checkpoint``, from the run folder's summary.json."""
    for folder in (checkpoint.parent, checkpoint.parent.parent):
        if (folder / SUMMARY_FILE).is_file():
            return json.loads((folder / SUMMARY_FILE).read_text())["config"]
    raise FileNotFoundError(
        f"no summary.json beside {checkpoint} or in its run folder: --checkpoint takes the "
        "<run folder>/checkpoints/best.ckpt that `python -m lra` writes (its config comes from summary.json)"
    )


def checkpoint_core_inputs(
    checkpoint: Path, data_root: Path | None, count: int
) -> list[tuple[QKV, torch.Tensor | None]]:
    """Q, K, V and mask at every attention core of a trained harness model on ``count`` validation inputs."""
    from omegaconf import OmegaConf

    from lra.train import build_datamodule, build_module

    if not checkpoint.is_file():
        raise FileNotFoundError(f"checkpoint {checkpoint} not found; train with `python -m lra ...` first")
    cfg = OmegaConf.create(run_config(checkpoint))
    overrides = {"task.batch_size": count, "num_workers": 0, "model.compile": False}
    if data_root is not None:
        overrides["data_root"] = str(data_root)
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value)
    module = build_module(cfg)
    module.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True)["state_dict"])
    datamodule = build_datamodule(cfg)
    datamodule.setup("validate")
    tokens, lengths, _ = next(iter(datamodule.val_dataloader()))
    model = module.model.eval()
    return capture_core_inputs(model, lambda: model(tokens, lengths))


def truncated_inputs(captured: Sequence[tuple[QKV, torch.Tensor | None]], seq_len: int) -> list[QKV]:
    """Per captured layer, the first ``seq_len`` positions of the sequences with at least that many
    real tokens: (eligible, heads, seq_len, head_dim) each; layers without such a sequence are dropped."""
    inputs = []
    for (q, k, v), mask in captured:
        lengths = mask.sum(-1) if mask is not None else torch.full((q.shape[0],), q.shape[2])
        keep = lengths >= seq_len
        if keep.any():
            inputs.append(tuple(t[keep, :, :seq_len].float() for t in (q, k, v)))
    return inputs
