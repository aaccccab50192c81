"""``experiment=lra``'s table: the official value of every element for every task, read from
google-research/long-range-arena at cd31e5c (paths under ``lra_benchmarks/``; Retrieval's model at
093bfc6^, the dual encoder the paper ran), each as (value, "file:line").

``task.lr`` is the schedule's constant (``learning_rate``); ``model.classifier_dim`` the hidden widths
of ``classifier_head`` / ``classifier_head_dual``; ``protocol.schedule_steps`` null is one cosine cycle
over all the steps (``steps_per_cycle``).
"""

from __future__ import annotations

TF = "models/transformer/transformer.py"
CL = "models/layers/common_layers.py"
LO = "listops/configs/base_listops_config.py"
TC = "text_classification/configs/base_tc_config.py"
MA = "matching/configs/base_match_config.py"
C10, C10T = "image/configs/cifar10/base_cifar10_config.py", "image/configs/cifar10/transformer_base.py"
P32, P32T = (
    "image/configs/pathfinder32/base_pathfinder32_config.py",
    "image/configs/pathfinder32/transformer_base.py",
)
P128 = "image/configs/pathfinder128/base_pathfinder128_config.py"
RSQRT = (
    "warmup_rsqrt",
    "utils/train_utils.py:95",
)  # the default factors, constant * linear_warmup * rsqrt_decay

SHARED = {
    "model.qkv_bias": (False, f"{TF}:71"),  # nn.SelfAttention(bias=False)
    "model.embedding_init_std": (1.0, f"{TF}:155"),
    "model.prenorm": (True, f"{TF}:59"),  # LayerNorm before attention and MLP, encoder_norm at the end
    "model.norm": ("layer", f"{TF}:59"),
    "model.positions": (True, f"{TF}:170"),  # AddPositionEmbs in every encoder
    "model.classifier_activation": ("relu", f"{CL}:192"),
    "model.mixer_dropout": (0.0, f"{TF}:88"),  # x + y: no dropout of whole channels
    "model.decay_norms_biases": (True, "listops/train.py:78"),  # Adam's weight_decay on every parameter
    "protocol.adam_betas": ([0.9, 0.98], "listops/train.py:75"),
    "protocol.adam_eps": (1e-9, "listops/train.py:77"),
    "protocol.clip_value": (1.0, f"{P128}:31"),  # grad_clip_norm = 1. (Path-X; the others clip nothing)
    "protocol.tested": ("final", "image/train.py:399"),  # test() on the final weights
    "protocol.select_after": (0.0, "image/train.py:399"),
    "trainer.precision": ("32-true", f"{TF}:100"),  # use_bfloat16=False
    "features": (None, f"{TF}:60"),  # no shared size: each attention its own
}

TASKS = {
    "listops": {
        "task.batch_size": (32, f"{LO}:22"),
        "task.eval_every": (50, f"{LO}:23"),
        "trainer.max_steps": (5000, f"{LO}:24"),
        "task.lr": (0.05, f"{LO}:26"),
        "task.weight_decay": (0.1, f"{LO}:27"),
        "protocol.schedule": ("warmup_rsqrt", "listops/train.py:216"),  # no factors passed: the default
        "task.warmup_steps": (1000, "utils/train_utils.py:97"),  # no warmup passed: the default
        "protocol.schedule_steps": (None, "listops/train.py:216"),
        "model.dim": (512, f"{LO}:45"),
        "model.num_heads": (8, f"{LO}:46"),
        "model.depth": (4, f"{LO}:47"),
        "model.qkv_dim": (512, f"{LO}:48"),
        "model.ffn_dim": (1024, f"{LO}:49"),
        "model.classifier_dim": (1024, f"{CL}:191"),  # Dense(mlp_dim)
        "model.dropout": (0.1, f"{TF}:109"),  # listops/train.py:180-190 passes none
        "protocol.attention_dropout": (0.1, f"{TF}:110"),
        "model.learn_pos_emb": (False, f"{TF}:111"),
        "model.pooling": ("first", f"{TF}:113"),  # classifier_pool='CLS', common_layers.py:187
        "model.cls_token": (True, f"{TF}:161"),
        "protocol.clip": (None, "listops/train.py:121"),  # apply_gradient, no clipping
        "task.val_from_test": (False, "listops/input_pipeline.py:65"),  # the _val.tsv split
    },
    "text": {
        "task.batch_size": (32, f"{TC}:23"),
        "task.eval_every": (100, f"{TC}:24"),
        "trainer.max_steps": (20000, f"{TC}:25"),
        "task.lr": (0.05, f"{TC}:27"),
        "task.weight_decay": (0.1, f"{TC}:28"),
        "protocol.schedule": ("warmup_rsqrt", f"{TC}:39"),
        "task.warmup_steps": (8000, f"{TC}:40"),
        "protocol.schedule_steps": (None, f"{TC}:39"),
        "model.pooling": ("first", f"{TC}:41"),
        "model.dim": (256, f"{TC}:45"),
        "model.num_heads": (4, f"{TC}:46"),
        "model.depth": (4, f"{TC}:47"),
        "model.qkv_dim": (256, f"{TC}:48"),
        "model.ffn_dim": (1024, f"{TC}:49"),
        "model.classifier_dim": (1024, f"{CL}:191"),
        "model.dropout": (0.1, f"{TF}:109"),
        "protocol.attention_dropout": (0.1, f"{TF}:110"),
        "model.learn_pos_emb": (False, f"{TF}:111"),
        "model.cls_token": (True, f"{TF}:161"),
        "protocol.clip": (None, "text_classification/train.py:118"),  # apply_gradient, no clipping
        "task.val_from_test": (True, "text_classification/input_pipeline.py:45"),  # valid_raw = data['test']
    },
    "retrieval": {
        "task.batch_size": (32, f"{MA}:23"),
        "task.eval_every": (100, f"{MA}:24"),
        "trainer.max_steps": (5000, f"{MA}:25"),
        "task.lr": (0.05, f"{MA}:27"),
        "task.weight_decay": (0.1, f"{MA}:28"),
        "protocol.schedule": ("warmup_rsqrt", f"{MA}:39"),
        "task.warmup_steps": (8000, f"{MA}:40"),
        "protocol.schedule_steps": (None, f"{MA}:39"),
        "model.pooling": ("first", f"{MA}:43"),  # CLS pooling reads each document's first position
        "model.dim": (128, f"{MA}:46"),
        "model.num_heads": (4, f"{MA}:47"),
        "model.depth": (4, f"{MA}:48"),
        "model.qkv_dim": (128, f"{MA}:49"),
        "model.ffn_dim": (512, f"{MA}:50"),
        "model.classifier_dim": ([512, 256], f"{CL}:237"),  # Dense(mlp_dim), Dense(mlp_dim // 2)
        "model.dual_features": ("concat", f"{CL}:236"),  # interaction=None: [u, v]
        "model.dropout": (0.1, f"{TF}:241"),
        "protocol.attention_dropout": (0.1, f"{TF}:242"),
        "model.learn_pos_emb": (False, f"{TF}:111"),
        "model.cls_token": (False, f"{TF}:161"),  # the dual encoder's encoders: classifier=False
        "protocol.clip": (None, "matching/train.py:119"),  # apply_gradient, no clipping
        "task.val_from_test": (False, "matching/input_pipeline.py:53"),  # the .eval.tsv split
    },
    "image": {
        "task.batch_size": (256, f"{C10}:27"),
        "task.eval_every": (175, f"{C10}:28"),
        "trainer.max_steps": (35000, f"{C10}:29"),
        "task.weight_decay": (0.0, f"{C10}:31"),
        "protocol.clip": (None, f"{C10}:32"),
        "task.lr": (5e-4, f"{C10}:40"),
        "protocol.schedule": ("warmup_cosine", f"{C10}:41"),
        "task.warmup_steps": (175, f"{C10}:42"),
        "protocol.schedule_steps": (None, f"{C10}:43"),
        "model.dropout": (0.3, f"{C10}:52"),
        "protocol.attention_dropout": (0.2, f"{C10}:53"),
        "model.learn_pos_emb": (True, f"{C10}:55"),
        "model.depth": (1, f"{C10T}:24"),
        "model.pooling": ("first", f"{C10T}:25"),
        "model.dim": (128, f"{C10T}:26"),
        "model.ffn_dim": (128, f"{C10T}:27"),
        "model.classifier_dim": (128, f"{C10T}:27"),  # classifier_head's Dense(mlp_dim)
        "model.num_heads": (8, f"{C10T}:28"),
        "model.qkv_dim": (64, f"{C10T}:29"),
        "model.cls_token": (True, f"{TF}:161"),
        "task.val_from_test": (False, "image/input_pipeline.py:66"),  # train[90%:]
    },
    "pathfinder": {
        "task.batch_size": (512, f"{P32}:26"),
        "task.eval_every": (312, f"{P32}:27"),
        "trainer.max_steps": (62400, f"{P32}:28"),
        "task.weight_decay": (0.0, f"{P32}:30"),
        "protocol.clip": (None, f"{P32}:31"),
        "task.lr": (1e-3, f"{P32}:39"),
        "protocol.schedule": ("warmup_cosine", f"{P32}:40"),
        "task.warmup_steps": (312, f"{P32}:41"),
        "protocol.schedule_steps": (None, f"{P32}:42"),
        "protocol.attention_dropout": (0.1, f"{P32}:53"),
        "model.pooling": ("mean", f"{P32}:54"),
        "model.learn_pos_emb": (False, f"{P32}:55"),
        "model.depth": (4, f"{P32T}:24"),
        "model.num_heads": (4, f"{P32T}:25"),
        "model.dim": (32, f"{P32T}:26"),
        "model.dropout": (0.2, f"{P32T}:27"),
        "model.qkv_dim": (16, f"{P32T}:28"),
        "model.ffn_dim": (32, f"{P32T}:29"),
        "model.classifier_dim": (32, f"{P32T}:29"),
        "model.cls_token": (False, f"{TF}:161"),  # MEAN pooling: no CLS token
        "task.val_from_test": (False, "image/input_pipeline.py:173"),  # the split's own validation part
    },
    "pathx": {
        "task.batch_size": (64, f"{P128}:26"),
        "task.eval_every": (2500, f"{P128}:27"),
        "trainer.max_steps": (500000, f"{P128}:28"),
        "task.weight_decay": (0.0, f"{P128}:30"),
        "protocol.clip": ("norm", f"{P128}:31"),
        "task.lr": (1e-3, f"{P128}:39"),
        "protocol.schedule": ("warmup_cosine", f"{P128}:40"),
        "task.warmup_steps": (2500, f"{P128}:41"),
        "protocol.schedule_steps": (None, f"{P128}:42"),
        "model.depth": (1, f"{P128}:46"),
        "model.num_heads": (2, f"{P128}:47"),
        "model.dim": (32, f"{P128}:48"),
        "model.dropout": (0.1, f"{P128}:49"),
        "model.qkv_dim": (16, f"{P128}:51"),
        "model.ffn_dim": (32, f"{P128}:52"),
        "model.classifier_dim": (32, f"{P128}:52"),
        "protocol.attention_dropout": (0.1, f"{P128}:53"),
        "model.pooling": ("mean", f"{P128}:54"),
        "model.learn_pos_emb": (True, f"{P128}:55"),
        "model.cls_token": (False, f"{TF}:161"),
        "task.val_from_test": (False, "image/input_pipeline.py:173"),  # the split's own validation part
    },
}

OFFICIAL = {task: SHARED | values for task, values in TASKS.items()}
