"""``experiment=s4``'s table: the official value of every element for every task, read from
state-spaces/s4 at e757cef (C's rate: since 070384a), each as (value, "file:line"); ``E/`` is
``configs/experiment/lra/``. The layer is S4D, their ``model/layer=s4d`` (``mode: diag``,
``kernels/ssm.py`` ``SSMKernelDiag``) over the same configs.

Their epochs are in steps of this harness's training splits (``conf/task/``; docs/protocols.md).
"""

from __future__ import annotations

LI, IM, AA = "E/s4-listops.yaml", "E/s4-imdb.yaml", "E/s4-aan.yaml"
CI, PF, PX = "E/s4-cifar.yaml", "E/s4-pathfinder.yaml", "E/s4-pathx.yaml"

SHARED = {
    "model.num_heads": (1, "src/models/sequence/kernels/fftconv.py:32"),  # channels 1: no heads
    "model.ffn_dim": (0, "configs/model/base.yaml:10"),  # residual R around the layer alone
    "model.dropout": (0.0, "src/models/sequence/backbones/model.py:53"),
    "model.positions": (False, "configs/pipeline/imdb.yaml:14"),  # encoder: embedding, no positions
    "model.decay_norms_biases": (False, "configs/config.yaml:43"),  # add_optimizer_hooks, train.py:460
    "model.embedding_init_std": (1.0, "src/tasks/encoders.py:417"),  # nn.Embedding: N(0, 1)
    "model.classifier_activation": ("gelu", "configs/pipeline/aan.yaml:12"),
    "attention.init": ("lin", "configs/model/layer/s4d.yaml:5"),  # init: diag-lin
    "protocol.schedule": ("warmup_cosine_hf", "configs/scheduler/cosine_warmup.yaml:6"),
    "protocol.clip": (None, "configs/trainer/default.yaml:9"),
    "protocol.select_after": (0.0, "configs/callbacks/checkpoint.yaml:3"),  # the best val/accuracy
    "protocol.tested": ("best", "configs/callbacks/checkpoint.yaml:3"),
    "protocol.adam_betas": ([0.9, 0.999], "configs/optimizer/adamw.yaml:5"),
    "protocol.adam_eps": (1e-8, "configs/optimizer/adamw.yaml:2"),  # torch's default: the config sets none
    "trainer.precision": ("32-true", "configs/trainer/default.yaml:3"),  # no precision set
    "features": (None, "configs/model/layer/s4.yaml:2"),  # d_state per task, set below
}

TASKS = {
    "listops": {
        "model.depth": (6, f"{LI}:9"),
        "model.dim": (256, f"{LI}:10"),
        "model.prenorm": (False, f"{LI}:11"),
        "model.norm": ("batch", f"{LI}:12"),
        "attention.dropout": (0.0, f"{LI}:8"),  # model.dropout: S4Block's tied dropout after the GELU
        "attention.conv_dropout": (
            0.0,
            f"{LI}:8",
        ),  # model.dropout: FFTConv's nn.Dropout before it (fftconv.py:78)
        "model.mixer_dropout": (0.0, f"{LI}:8"),  # model.dropout: the residual block's tied dropout
        "attention.d_state": (4, f"{LI}:14"),
        "attention.lr": (0.001, f"{LI}:17"),  # A's (and B's) rate, wd 0
        "attention.dt_lr": (0.01, f"{LI}:16"),  # lr.dt: null, the run's rate
        "attention.c_lr": (None, f"{LI}:15"),  # lr a dict without C: lr_dict['C'] None
        "attention.dt_min": (0.001, f"{LI}:19"),
        "attention.dt_max": (0.1, f"{LI}:20"),
        "attention.bidirectional": (True, f"{LI}:22"),
        "attention.shared_directions": (
            True,
            f"{LI}:22",
        ),  # FFTConv: one kernel of channels 2, dt and A shared
        "task.batch_size": (32, f"{LI}:29"),
        "task.lr": (0.01, f"{LI}:32"),
        "task.weight_decay": (0.05, f"{LI}:33"),
        "protocol.schedule_steps": (None, f"{LI}:36"),  # num_training_steps 120,000 = the steps
        "task.warmup_steps": (12000, f"{LI}:37"),
        "trainer.max_steps": (120000, f"{LI}:40"),  # 40 epochs of 3000
        "task.eval_every": (3000, f"{LI}:40"),  # one epoch
        "model.classifier_dim": ([], "src/tasks/decoders.py:37"),
    },
    "text": {
        "model.depth": (6, f"{IM}:12"),
        "model.dim": (256, f"{IM}:13"),
        "model.prenorm": (True, f"{IM}:14"),
        "model.norm": ("batch", f"{IM}:15"),
        "attention.dropout": (0.0, f"{IM}:11"),  # model.dropout: S4Block's tied dropout after the GELU
        "attention.conv_dropout": (
            0.0,
            f"{IM}:11",
        ),  # model.dropout: FFTConv's nn.Dropout before it (fftconv.py:78)
        "model.mixer_dropout": (0.0, f"{IM}:11"),  # model.dropout: the residual block's tied dropout
        "attention.d_state": (4, f"{IM}:17"),
        "attention.lr": (0.001, f"{IM}:20"),  # A's (and B's) rate, wd 0
        "attention.dt_lr": (0.01, f"{IM}:19"),  # lr.dt: null, the run's rate
        "attention.c_lr": (None, f"{IM}:18"),  # lr a dict without C: lr_dict['C'] None
        "attention.dt_min": (0.001, f"{IM}:22"),
        "attention.dt_max": (0.1, f"{IM}:23"),
        "attention.bidirectional": (True, f"{IM}:25"),
        "attention.shared_directions": (
            True,
            f"{IM}:25",
        ),  # FFTConv: one kernel of channels 2, dt and A shared
        "task.batch_size": (16, f"{IM}:33"),
        "task.lr": (0.01, f"{IM}:36"),
        "task.weight_decay": (0.05, f"{IM}:37"),
        "protocol.schedule_steps": (50000, f"{IM}:40"),
        "task.warmup_steps": (5000, f"{IM}:41"),
        "trainer.max_steps": (49984, f"{IM}:44"),  # 32 epochs of 1562 (25,000 reviews / 16)
        "task.eval_every": (1562, f"{IM}:44"),  # one epoch
        "task.val_from_test": (True, "configs/dataset/imdb.yaml:16"),  # val_split: 0.0
        "model.classifier_dim": ([], "src/tasks/decoders.py:37"),
    },
    "retrieval": {
        "model.depth": (6, f"{AA}:12"),
        "model.dim": (256, f"{AA}:14"),
        "model.prenorm": (True, f"{AA}:13"),
        "model.norm": ("batch", f"{AA}:15"),
        "attention.dropout": (0.0, f"{AA}:11"),  # model.dropout: S4Block's tied dropout after the GELU
        "attention.conv_dropout": (
            0.0,
            f"{AA}:11",
        ),  # model.dropout: FFTConv's nn.Dropout before it (fftconv.py:78)
        "model.mixer_dropout": (0.0, f"{AA}:11"),  # model.dropout: the residual block's tied dropout
        "attention.d_state": (4, f"{AA}:17"),
        "attention.lr": (0.001, f"{AA}:20"),  # A's (and B's) rate, wd 0
        "attention.dt_lr": (0.01, f"{AA}:19"),  # lr.dt: null, the run's rate
        "attention.c_lr": (None, f"{AA}:18"),  # lr a dict without C: lr_dict['C'] None
        "attention.dt_min": (0.001, f"{AA}:22"),
        "attention.dt_max": (0.1, f"{AA}:23"),
        "attention.bidirectional": (True, f"{AA}:25"),
        "attention.shared_directions": (
            True,
            f"{AA}:25",
        ),  # FFTConv: one kernel of channels 2, dt and A shared
        "task.batch_size": (64, f"{AA}:29"),
        "task.lr": (0.01, f"{AA}:32"),
        "task.weight_decay": (0.05, f"{AA}:33"),
        "protocol.schedule_steps": (50000, f"{AA}:36"),
        "task.warmup_steps": (5000, f"{AA}:37"),
        "trainer.max_steps": (45960, f"{AA}:40"),  # 20 epochs of 2298
        "task.eval_every": (2298, f"{AA}:40"),  # one epoch
        "model.classifier_dim": ([256], "configs/pipeline/aan.yaml:13"),  # d_model: null, the width
        "model.classifier_activation": ("gelu", "configs/pipeline/aan.yaml:12"),
        "model.dual_features": ("nli", "configs/pipeline/aan.yaml:11"),
    },
    "image": {
        "model.depth": (6, f"{CI}:10"),
        "model.dim": (512, f"{CI}:11"),
        "model.prenorm": (False, f"{CI}:12"),
        "model.norm": ("batch", f"{CI}:13"),
        "attention.dropout": (0.1, f"{CI}:8"),  # model.dropout: S4Block's tied dropout after the GELU
        "attention.conv_dropout": (
            0.1,
            f"{CI}:8",
        ),  # model.dropout: FFTConv's nn.Dropout before it (fftconv.py:78)
        "model.mixer_dropout": (0.1, f"{CI}:8"),  # model.dropout: the residual block's tied dropout
        "attention.d_state": (64, f"{CI}:15"),
        "attention.lr": (0.001, f"{CI}:16"),  # A's (and B's) rate, wd 0
        "attention.dt_lr": (None, f"{CI}:16"),  # null: as A's, the float lr
        "attention.c_lr": (0.001, f"{CI}:16"),  # a float lr is every lr_dict key's, C's too (ssm.py:531)
        "attention.dt_min": (0.001, f"{CI}:17"),
        "attention.dt_max": (0.1, f"{CI}:18"),
        "attention.bidirectional": (True, f"{CI}:20"),
        "attention.shared_directions": (
            True,
            f"{CI}:20",
        ),  # FFTConv: one kernel of channels 2, dt and A shared
        "task.batch_size": (50, f"{CI}:27"),
        "task.lr": (0.01, f"{CI}:30"),
        "task.weight_decay": (0.05, f"{CI}:31"),
        "protocol.schedule_steps": (None, f"{CI}:37"),  # num_training_steps 180,000 = the steps
        "task.warmup_steps": (18000, f"{CI}:38"),
        "trainer.max_steps": (180000, f"{CI}:34"),  # 200 epochs of 900
        "task.eval_every": (900, f"{CI}:34"),  # one epoch
        "model.classifier_dim": ([], "src/tasks/decoders.py:37"),
    },
    "pathfinder": {
        "model.depth": (6, f"{PF}:13"),
        "model.dim": (256, f"{PF}:15"),
        "model.prenorm": (True, f"{PF}:14"),
        "model.norm": ("batch", f"{PF}:16"),
        "attention.dropout": (0.0, f"{PF}:12"),  # model.dropout: S4Block's tied dropout after the GELU
        "attention.conv_dropout": (
            0.0,
            f"{PF}:12",
        ),  # model.dropout: FFTConv's nn.Dropout before it (fftconv.py:78)
        "model.mixer_dropout": (0.0, f"{PF}:12"),  # model.dropout: the residual block's tied dropout
        "attention.d_state": (64, f"{PF}:18"),
        "attention.lr": (0.001, f"{PF}:19"),  # A's (and B's) rate, wd 0
        "attention.dt_lr": (None, f"{PF}:19"),  # null: as A's, the float lr
        "attention.c_lr": (0.001, f"{PF}:19"),  # a float lr is every lr_dict key's, C's too (ssm.py:531)
        "attention.dt_min": (0.001, f"{PF}:20"),
        "attention.dt_max": (0.1, f"{PF}:21"),
        "attention.bidirectional": (True, f"{PF}:23"),
        "attention.shared_directions": (
            True,
            f"{PF}:23",
        ),  # FFTConv: one kernel of channels 2, dt and A shared
        "task.batch_size": (64, f"{PF}:30"),
        "task.lr": (0.004, f"{PF}:33"),
        "task.weight_decay": (0.05, f"{PF}:34"),
        "protocol.schedule_steps": (None, f"{PF}:8"),  # num_training_steps 500,000 = the steps
        "task.warmup_steps": (50000, f"{PF}:9"),
        "trainer.max_steps": (500000, f"{PF}:37"),  # 200 epochs of 2500
        "task.eval_every": (2500, f"{PF}:37"),  # one epoch
        "model.classifier_dim": ([], "src/tasks/decoders.py:37"),
    },
    "pathx": {
        "model.depth": (6, f"{PX}:13"),
        "model.dim": (256, f"{PX}:15"),
        "model.prenorm": (True, f"{PX}:14"),
        "model.norm": ("batch", f"{PX}:16"),
        "attention.dropout": (0.0, f"{PX}:12"),  # model.dropout: S4Block's tied dropout after the GELU
        "attention.conv_dropout": (
            0.0,
            f"{PX}:12",
        ),  # model.dropout: FFTConv's nn.Dropout before it (fftconv.py:78)
        "model.mixer_dropout": (0.0, f"{PX}:12"),  # model.dropout: the residual block's tied dropout
        "attention.d_state": (64, f"{PX}:18"),
        "attention.lr": (0.001, f"{PX}:19"),  # A's (and B's) rate, wd 0
        "attention.dt_lr": (None, f"{PX}:19"),  # null: as A's, the float lr
        "attention.c_lr": (0.001, f"{PX}:19"),  # a float lr is every lr_dict key's, C's too (ssm.py:531)
        "attention.dt_min": (0.0001, f"{PX}:20"),
        "attention.dt_max": (0.1, f"{PX}:21"),
        "attention.bidirectional": (True, f"{PX}:23"),
        "attention.shared_directions": (
            True,
            f"{PX}:23",
        ),  # FFTConv: one kernel of channels 2, dt and A shared
        "task.batch_size": (16, f"{PX}:27"),
        "task.lr": (0.001, f"{PX}:30"),
        "task.weight_decay": (0.05, f"{PX}:31"),
        "protocol.schedule_steps": (None, f"{PX}:8"),  # num_training_steps 500,000 = the steps
        "task.warmup_steps": (50000, f"{PX}:9"),
        "trainer.max_steps": (500000, f"{PX}:34"),  # 50 epochs of 10,000
        "task.eval_every": (10000, f"{PX}:34"),  # one epoch
        "model.classifier_dim": ([], "src/tasks/decoders.py:37"),
    },
}

OFFICIAL = {task: SHARED | values for task, values in TASKS.items()}
