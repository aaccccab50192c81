"""MAD's difficulty levels: each task's baseline and the values its benchmark sweeps.

Source: athms/mad-lab ``configs/tasks/*.yml`` (baseline and changes) and the sweep
``make_benchmark_mad_configs`` (``mad/configs.py`` L157-186): the baseline, then each changed
key's values in turn with every other key at the baseline. ``num_train_examples`` is the size of
the fixed training set, not a generator option; MAD's test set has 1280 examples
(``MADConfig.num_test_examples``, ``mad/configs.py`` L44) and MAD averages a task's score over
its levels. Options MAD leaves at ``MADConfig``'s defaults (``multi_query`` True, no noise) are
the generators' defaults.
"""

from __future__ import annotations

MAD_TEST_EXAMPLES = 1280

MAD_LEVELS: dict[str, dict[str, dict]] = {
    "in_context_recall": {
        "baseline": {"vocab_size": 16, "seq_len": 128, "num_train_examples": 12800},
        "changes": {
            "vocab_size": [32, 64, 128],
            "seq_len": [256, 512, 1024],
            "num_train_examples": [6400, 3200, 1600, 800],
        },
    },
    "fuzzy_in_context_recall": {
        "baseline": {
            "vocab_size": 16,
            "seq_len": 128,
            "k_motif_size": 3,
            "v_motif_size": 3,
            "num_train_examples": 12800,
        },
        "changes": {
            "vocab_size": [32, 64, 128],
            "seq_len": [256, 512, 1024],
            "num_train_examples": [6400, 3200, 1600, 800],
        },
    },
    "noisy_in_context_recall": {
        "baseline": {
            "vocab_size": 32,
            "noise_vocab_size": 16,
            "seq_len": 128,
            "frac_noise": 0.2,
            "num_train_examples": 12800,
        },
        "changes": {
            "vocab_size": [48, 80, 144],  # 16 of them noise tokens
            "seq_len": [256, 512, 1024],
            "num_train_examples": [6400, 3200, 1600, 800],
            "frac_noise": [0.4, 0.6, 0.8],
        },
    },
    "selective_copying": {
        "baseline": {"vocab_size": 16, "seq_len": 256, "num_tokens_to_copy": 16, "num_train_examples": 12800},
        "changes": {
            "vocab_size": [32, 64, 128],
            "seq_len": [512, 1024],
            "num_train_examples": [6400, 3200, 1600, 800],
            "num_tokens_to_copy": [32, 64, 96],
        },
    },
    "compression": {
        "baseline": {"vocab_size": 16, "seq_len": 32, "num_train_examples": 12800},
        "changes": {
            "vocab_size": [32, 64, 128],
            "seq_len": [64, 128, 256],
            "num_train_examples": [6400, 3200, 1600, 800],
        },
    },
    "memorization": {
        "baseline": {"vocab_size": 256, "seq_len": 32, "num_train_examples": 256},
        "changes": {"vocab_size": [512, 1024, 2048, 4096, 8192]},
    },
}


def mad_levels(task: str) -> list[dict]:
    """The levels MAD's benchmark runs for ``task``: the baseline first, then one change at a time."""
    if task not in MAD_LEVELS:
        raise ValueError(f"{task!r} has no MAD levels: valid tasks are {', '.join(MAD_LEVELS)}")
    baseline, changes = MAD_LEVELS[task]["baseline"], MAD_LEVELS[task]["changes"]
    return [dict(baseline)] + [
        {**baseline, key: value} for key, values in changes.items() for value in values
    ]
