"""Induction heads, as the H3 authors' synthetics define them.

Source: HazyResearch/safari ``src/dataloaders/synthetics.py``: ``generate_start_seq`` and
``generate_induction_head`` (L79-128), the split and labels of ``ICLDataModule.setup``
(L252-317); defaults: ``configs/pipeline/induction_head.yaml`` (vocabulary 20, length 30) over
``configs/dataset/icl_synthetics.yaml`` (5000 training and 500 test examples) and the module's
(``induction_len`` 1, ``induction_num_triggers`` 1). The Mamba paper's Appendix E.1 names the
same task (after H3); its settings are not adopted here.

With V = ``vocab_size`` (special tokens included): ``input_seq_len`` (L) tokens uniform over
[0, V-2), then the copy prefix V-2. With probability 1/2 one trigger, else ``num_triggers``
positions uniform over [0, L - 1 - induction_len), sorted, keeping each that lies more than
``induction_len`` past the last kept one; at each kept position the copy prefix, followed by
the ``induction_len`` tokens that followed the first one. Those tokens are appended at the end.
As the source's test set: the inputs drop the last token, and the last ``induction_len``
positions (the final copy prefix and the copied tokens but the last) carry the copied tokens.
Length: L + ``induction_len``.

Differences from the source: safari trains on every next token and scores the copied ones
(``source_loss``); here both splits carry the copied ones. With ``induction_len`` > 1 the
copied tokens after the final copy prefix are answers; ``mask_answers`` (default on) replaces
them in the input by the noop token V-1 (safari's unused "." token). Token ids: safari sorts
its tokens as strings; here data tokens are 0..V-3, the copy prefix V-2 and noop V-1.
Safari's sets are fixed and deduplicated; these are not deduplicated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from data_prep.recall.base import IGNORE, Batch, RecallTask, require
from data_prep.recall.sampling import hide_answers


@dataclass(frozen=True)
class InductionOptions:
    """safari's induction-head pipeline: vocabulary 20 (2 special), length 30, one copied token."""

    vocab_size: int = 20
    input_seq_len: int = 30
    induction_len: int = 1
    num_triggers: int = 1
    mask_answers: bool = True

    def __post_init__(self) -> None:
        task, copied = "induction", self.induction_len
        require(
            self.vocab_size >= 3,
            f"{task}: vocab_size={self.vocab_size} is too small for 2 special tokens: valid range >= 3",
        )
        require(
            1 <= copied <= self.input_seq_len - 2,
            f"{task}: induction_len={copied} does not fit input_seq_len={self.input_seq_len}:"
            f" valid range 1..{self.input_seq_len - 2}",
        )
        require(self.num_triggers >= 1, f"{task}: num_triggers={self.num_triggers}: valid range >= 1")


class Induction(RecallTask):
    """Inputs and targets (n, input_seq_len + induction_len); vocabulary V, classes V - 2."""

    name: ClassVar[str] = "induction"
    source: ClassVar[str] = "HazyResearch/safari src/dataloaders/synthetics.py L79-128, L252-317"
    source_training_set: ClassVar[str] = "fixed"
    source_loss: ClassVar[str] = "next-token"
    Options: ClassVar[type] = InductionOptions
    options: InductionOptions

    @property
    def vocab_size(self) -> int:
        return self.options.vocab_size

    @property
    def num_classes(self) -> int:
        return self.options.vocab_size - 2

    @property
    def seq_len(self) -> int:
        return self.options.input_seq_len + self.options.induction_len

    def _draw(self, rng: np.random.Generator, n: int, split: str) -> Batch:
        o = self.options
        length, copied, prefix = o.input_seq_len, o.induction_len, o.vocab_size - 2
        tokens = np.full((n, length + 1 + copied), prefix, np.int64)  # (n, L+1+c)
        tokens[:, :length] = rng.integers(0, o.vocab_size - 2, size=(n, length))
        drawn = rng.integers(0, length - 1 - copied, size=(n, o.num_triggers))
        single = rng.random(n) < 0.5  # one trigger, uniform, in half the examples
        triggers = np.where(single[:, None], drawn, np.sort(drawn, axis=1))  # (n, t)
        kept = np.zeros(triggers.shape, bool)
        kept[:, 0] = True
        last = triggers[:, 0]
        for t in range(1, o.num_triggers):  # one pass per trigger: the greedy spacing rule
            kept[:, t] = ~single & (triggers[:, t] - last > copied)
            last = np.where(kept[:, t], triggers[:, t], last)
        rows = np.arange(n)[:, None]
        offsets = 1 + np.arange(copied)
        to_copy = tokens[rows, triggers[:, :1] + offsets]  # (n, c) after the first trigger
        for t in range(o.num_triggers):  # one pass per trigger
            where = rows[kept[:, t], 0]
            tokens[where, triggers[where, t]] = prefix
            tokens[where[:, None], triggers[where, t][:, None] + offsets] = to_copy[where]
        tokens[:, length + 1 :] = to_copy

        inputs = tokens[:, :-1]
        targets = np.full(inputs.shape, IGNORE, np.int64)
        targets[:, -copied:] = to_copy
        if o.mask_answers:
            inputs = hide_answers(inputs, targets, o.vocab_size - 1)
        return Batch(np.ascontiguousarray(inputs), targets)
