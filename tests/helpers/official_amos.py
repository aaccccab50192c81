"""``experiment=amos``'s table: the official value of every element for every task, read from
IdoAmos/not-from-scratch at f919137, each as (value, "file:line"); ``E/`` is ``configs/experiment/lra/``.

Their epochs are in steps of this harness's training splits (``conf/task/``; docs/protocols.md):
ListOps 96,000, Text 22,500, Retrieval 147,086 pairs, Image 45,000, Pathfinder and Path-X 160,000.
ListOps', Text's and Retrieval's rates are their paper's Table 4: those configs' ``optimizer.lr: 0.05``
is the LRA code's rsqrt constant (docs/protocols.md, "What experiment=amos could not match").
"""

from __future__ import annotations

L, LM = "E/transformer-lra-listops.yaml", "E/transformer-lra-listops-mlm.yaml"
T, TM = "E/transformer-lra-imdb.yaml", "E/transformer-lra-imdb-mlm.yaml"
A, AM = "E/transformer-lra-aan.yaml", "E/transformer-lra-aan-mlm.yaml"
C, CM = "E/transformer-lra-cifar.yaml", "E/transformer-lra-cifar-mlm.yaml"
P, PM = "E/transformer-lra-pathfinder.yaml", "E/transformer-lra-pathfinder-mlm.yaml"
X, XM = "E/transformer-lra-pathx-small.yaml", "E/transformer-lra-pathx-mlm-small.yaml"
TABLE_4 = "paper Table 4"

SHARED = {
    "model.dropout": (0.0, "configs/model/base.yaml:15"),
    "model.qkv_dim": (None, f"{L}:21"),  # kdim: null, d_k = d_model / n_heads
    "model.qkv_bias": (True, f"{L}:18"),
    "model.learn_pos_emb": (False, "configs/model/transformer.yaml:7"),  # encoder: position, sinusoids
    "model.positions": (True, "configs/model/transformer.yaml:7"),
    "model.cls_token": (False, f"{T}:32"),  # append_cls: False
    "model.embedding_init_std": (1.0, "src/tasks/encoders.py:426"),  # nn.Embedding: N(0, 1)
    "model.prenorm": (True, f"{L}:10"),
    "model.norm": ("layer", f"{L}:12"),
    "model.mixer_dropout": (0.0, "configs/model/base.yaml:15"),
    "model.decay_norms_biases": (True, "configs/optimizer/adamw.yaml:4"),  # one group, decay on all
    "protocol.schedule": ("warmup_constant_from_zero", "configs/scheduler/constant_warmup.yaml:6"),
    "pretrain.schedule": ("warmup_constant_from_zero", "configs/scheduler/constant_warmup.yaml:6"),
    "protocol.clip": (None, "configs/trainer/default.yaml:5"),  # gradient_clip_val: 0.0
    "protocol.select_after": (0.0, "train.py:608"),  # val and test every epoch
    "protocol.tested": ("best", "train.py:608"),
    "protocol.adam_betas": ([0.9, 0.999], "configs/optimizer/adamw.yaml:5"),
    "protocol.adam_eps": (1e-8, "configs/optimizer/adamw.yaml:2"),  # torch's default: the config sets none
    "protocol.attention_dropout": (0.0, f"{L}:17"),  # dropout: null, so model.dropout
    "protocol.schedule_steps": (None, "configs/scheduler/constant_warmup.yaml:6"),  # constant: no end
    "trainer.precision": ("32-true", "configs/trainer/default.yaml:1"),  # no precision set
    "features": (None, f"{L}:14"),  # mhfa: exact attention, no size
}

TASKS = {
    "listops": {
        "task.batch_size": (32, f"{L}:30"),
        "task.lr": (1e-4, TABLE_4),
        "task.weight_decay": (0.0, f"{L}:34"),
        "task.warmup_steps": (2000, f"{L}:37"),
        "task.eval_every": (3000, f"{L}:41"),  # one epoch: 96,000 / 32
        "trainer.max_steps": (300000, f"{L}:41"),  # 100 epochs
        "pretrain.lr": (1e-3, TABLE_4),
        "pretrain.batch_size": (32, f"{LM}:30"),
        "pretrain.warmup_steps": (2000, f"{LM}:37"),
        "pretrain.steps": (300000, f"{LM}:41"),  # 100 epochs
        "model.dim": (512, f"{L}:11"),
        "model.depth": (6, f"{L}:9"),
        "model.num_heads": (8, f"{L}:16"),
        "model.ffn_dim": (2048, f"{L}:25"),  # expand 4
        "model.pooling": ("mean", f"{L}:48"),
        "model.classifier_dim": ([], f"{L}:47"),  # sequence: one Linear
        "task.val_from_test": (False, "src/dataloaders/lra.py:310"),  # basic_val.tsv
    },
    "text": {
        "task.batch_size": (32, f"{T}:35"),
        "task.lr": (1e-4, TABLE_4),
        "task.weight_decay": (0.1, f"{T}:39"),
        "task.warmup_steps": (2000, f"{T}:43"),
        "task.eval_every": (703, f"{T}:46"),  # one epoch: 22,500 / 32
        "trainer.max_steps": (45695, f"{T}:46"),  # 65 epochs
        "task.val_from_test": (True, "configs/dataset/imdb.yaml:16"),  # val_split: 0.0
        "pretrain.lr": (5e-4, TABLE_4),
        "pretrain.batch_size": (32, f"{TM}:43"),
        "pretrain.warmup_steps": (5000, f"{TM}:51"),
        "pretrain.steps": (22496, f"{TM}:54"),  # 32 epochs
        "model.dim": (512, f"{T}:11"),
        "model.depth": (6, f"{T}:9"),
        "model.num_heads": (8, f"{T}:16"),
        "model.ffn_dim": (2048, f"{T}:25"),
        "model.pooling": ("mean", f"{T}:53"),
        "model.classifier_dim": ([512], f"{T}:52"),  # sequence_nonelinear: Linear(d, d), ReLU, Linear
        "model.classifier_activation": ("relu", "src/tasks/decoders.py:160"),
    },
    "retrieval": {
        "task.batch_size": (32, f"{A}:30"),
        "task.lr": (5e-4, TABLE_4),
        "task.weight_decay": (0.0, f"{A}:34"),
        "task.warmup_steps": (5000, f"{A}:38"),
        "task.eval_every": (4596, f"{A}:41"),  # one epoch: 147,086 / 32
        "trainer.max_steps": (147072, f"{A}:41"),  # 32 epochs
        "pretrain.lr": (5e-3, TABLE_4),
        "pretrain.batch_size": (32, f"{AM}:36"),  # pairs: AANLM makes 64 documents of them
        "pretrain.warmup_steps": (2000, f"{AM}:44"),
        "pretrain.steps": (147072, f"{AM}:47"),
        "model.dim": (128, f"{A}:11"),
        "model.depth": (4, f"{A}:9"),
        "model.num_heads": (4, f"{A}:16"),
        "model.ffn_dim": (512, f"{A}:25"),
        "model.pooling": ("mean", "configs/pipeline/aan.yaml:9"),
        "model.dual_features": ("nli", "configs/pipeline/aan.yaml:11"),
        "model.classifier_dim": ([128], "configs/pipeline/aan.yaml:13"),  # d_model null: the width
        "model.classifier_activation": ("gelu", "configs/pipeline/aan.yaml:12"),
    },
    "image": {
        "task.batch_size": (50, f"{C}:41"),
        "task.lr": (1e-3, f"{C}:44"),
        "task.weight_decay": (0.0, f"{C}:45"),
        "task.warmup_steps": (2000, f"{C}:9"),
        "task.eval_every": (900, f"{C}:48"),  # one epoch: 45,000 / 50
        "trainer.max_steps": (180000, f"{C}:48"),  # 200 epochs
        "pretrain.lr": (1e-3, f"{CM}:44"),
        "pretrain.batch_size": (32, f"{CM}:40"),
        "pretrain.warmup_steps": (2500, f"{CM}:9"),
        "pretrain.steps": (70300, f"{CM}:48"),  # 50 epochs of 1,406
        "model.dim": (64, f"{C}:15"),
        "model.depth": (3, f"{C}:13"),
        "model.num_heads": (4, f"{C}:20"),
        "model.ffn_dim": (128, f"{C}:29"),  # expand 2
        "model.pooling": ("mean", f"{C}:35"),
        "model.classifier_dim": ([64], f"{C}:34"),  # sequence_nonelinear
        "model.classifier_activation": ("relu", "src/tasks/decoders.py:160"),
    },
    "pathfinder": {
        "task.batch_size": (32, f"{P}:38"),
        "task.lr": (5e-4, f"{P}:41"),
        "task.weight_decay": (0.0, f"{P}:42"),
        "task.warmup_steps": (5000, f"{P}:9"),
        "task.eval_every": (5000, f"{P}:45"),  # one epoch: 160,000 / 32
        "trainer.max_steps": (1000000, f"{P}:45"),  # 200 epochs
        "pretrain.lr": (5e-4, f"{PM}:48"),
        "pretrain.batch_size": (32, f"{PM}:44"),
        "pretrain.warmup_steps": (2500, f"{PM}:9"),
        "pretrain.steps": (250000, f"{PM}:52"),  # 50 epochs
        "model.dim": (128, f"{P}:15"),
        "model.depth": (4, f"{P}:13"),
        "model.num_heads": (8, f"{P}:20"),
        "model.ffn_dim": (128, f"{P}:29"),  # expand 1
        "model.pooling": ("mean", f"{P}:35"),
        "model.classifier_dim": ([], f"{P}:33"),  # sequence: one Linear
    },
    "pathx": {
        "task.batch_size": (32, f"{X}:41"),
        "task.lr": (5e-4, f"{X}:44"),
        "task.weight_decay": (0.0, f"{X}:45"),
        "task.warmup_steps": (5000, f"{X}:9"),
        "task.eval_every": (5000, f"{X}:48"),  # one epoch: 160,000 / 32
        "trainer.max_steps": (1000000, f"{X}:48"),  # 200 epochs
        "pretrain.lr": (5e-4, f"{XM}:53"),
        "pretrain.batch_size": (32, f"{XM}:49"),
        "pretrain.warmup_steps": (5000, f"{XM}:8"),
        "pretrain.steps": (1000000, f"{XM}:57"),  # 200 epochs
        "model.dim": (128, f"{X}:15"),
        "model.depth": (4, f"{X}:13"),
        "model.num_heads": (4, f"{X}:23"),
        "model.ffn_dim": (128, f"{X}:32"),  # expand 1
        "model.pooling": ("max", f"{X}:38"),
        "model.classifier_dim": ([], f"{X}:36"),
    },
}

OFFICIAL = {task: SHARED | values for task, values in TASKS.items()}
