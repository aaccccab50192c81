"""Seeded synthetic recall diagnostics: MQAR (Zoology), MAD's six tasks, induction heads (H3).

    task = data_prep.recall.build("mqar", vocab_size=128, input_seq_len=64, num_kv_pairs=8)
    batch = task.sample(np.random.default_rng(0), 64)   # fresh draws: inputs, targets (64, 64)
    test = task.fixed(seed=1, n=1000, split="test")      # a fixed set, the same for the same seed

Every task gives ``inputs`` and ``targets`` (n, task.seq_len) int64, targets ``IGNORE`` (-100)
except at the labelled positions; ``task.vocab_size`` input ids, ``task.num_classes`` head
width. numpy only. Each task's source and its differences: its module's docstring, README.md.
"""

from data_prep.recall.base import IGNORE, Batch, RecallTask
from data_prep.recall.mad_levels import MAD_LEVELS, MAD_TEST_EXAMPLES, mad_levels
from data_prep.recall.registry import TASKS, build, options_of

__all__ = [
    "IGNORE",
    "MAD_LEVELS",
    "MAD_TEST_EXAMPLES",
    "TASKS",
    "Batch",
    "RecallTask",
    "build",
    "mad_levels",
    "options_of",
]
