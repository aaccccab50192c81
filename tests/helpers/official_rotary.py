"""``experiment=rotary``'s table: the value of every element for every task, read from Miralles-González
et al.'s released code (pablomiralles22/long-transformers at ec33dc6), each as (value, "file:line").

Per task the config without data-efficiency techniques: ``LO`` ListOps, ``TX`` Text, ``RT`` Retrieval,
``IM`` Image, ``PF`` Pathfinder (below), read through ``scripts/train.py`` and ``src/``. Their epochs are
in steps of this harness's training splits, whose loader drops the last incomplete batch (``conf/task/``;
docs/protocols.md): ListOps 96,000, Text 22,500, Retrieval 147,086 pairs, Image 45,000, Pathfinder
160,000. Where the harness has no exact key the value is its nearest setting (docs/protocols.md, "What
experiment=rotary could not match").
"""

from __future__ import annotations

LO = "configs/listops/rotary_transformer_noaugment_nopretrain.json"
TX = "configs/text_classification/rotary_transformer_wout_mlm.json"
RT = "configs/text_retrieval/rotary_transformer_wout_mlm.json"
IM = "configs/cifar10/rotary_transformer_no_augment.json"
PF = "configs/pathfinder/rotary_transformer_noaugment_nopretrain.json"
LISTOPS_T = "src/trainers/listops_trainer.py"
TEXT_T = "src/trainers/text_classification_trainer.py"  # Text and Retrieval (trainer_builder.py:19-32)
IMAGE_T = "src/trainers/cifar10_trainer.py"
PATHFINDER_T = "src/trainers/pathfinder_trainer.py"
ATTENTION = "src/models/modules/rotary_multihead_attention.py"
LAYER = "src/models/layers/transformer_encoder_layer.py"

SHARED = {
    "model.rope_fraction": (0.5, "src/utils/rotary_embedding.py:41"),  # thetas[::2] = 0: half the pairs turn
    "model.qkv_dim": (None, f"{ATTENTION}:29"),  # q/k width d_model, split over the heads
    "model.qkv_bias": (True, f"{ATTENTION}:13"),  # nn.Linear(..., bias=True) for W_Q, W_K, W_V, W_O
    "model.embedding_init_std": (1.0, "src/models/model_with_embedding.py:12"),  # nn.Embedding: N(0, 1)
    "model.classifier_activation": ("relu", "src/heads/classification_head.py:45"),
    "model.prenorm": (True, f"{LAYER}:17"),  # norm_first=True
    "model.norm": ("layer", f"{LAYER}:25"),
    "model.decay_norms_biases": (False, "src/utils/weight_decay_param_filter.py:3"),  # bias, norm, embedding
    "protocol.schedule": ("warmup_constant_from_zero", f"{LISTOPS_T}:113-121"),  # nearest: see the docs
    "protocol.select_after": (0.0, f"{LISTOPS_T}:134-138"),  # ModelCheckpoint over every validation
    "protocol.adam_eps": (1e-8, f"{LISTOPS_T}:108"),  # torch.optim.AdamW's default: no eps passed
    "protocol.attention_dropout": (0.0, f"{ATTENTION}:65"),  # scaled_dot_product_attention, no dropout_p
    "protocol.schedule_steps": (None, f"{LISTOPS_T}:117-121"),  # SequentialLR to the last step
}


TASKS = {
    "listops": {
        "model.position": ("rope", f"{LO}:10"),  # attention_params type rotary
        "model.cls_token": (True, "src/data_loaders/listops.py:102"),
        "model.pooling": ("mean", f"{LO}:33"),  # reduction_method mean
        "model.dropout": (0.0, f"{LO}:9"),
        "protocol.clip": (None, f"{LO}:52-60"),  # trainer_params: no gradient_clip_val
        "protocol.tested": ("best", f"{LISTOPS_T}:134-138"),  # ModelCheckpoint, monitor val acc, mode max
        "protocol.adam_betas": ([0.9, 0.98], f"{LO}:49"),
        "task.batch_size": (64, f"{LO}:42"),
        "task.lr": (1e-3, f"{LO}:48"),
        "task.weight_decay": (0.01, f"{LO}:50"),
        "task.warmup_steps": (6000, f"{LISTOPS_T}:113"),  # int(0.05 * 80 epochs * 1500 steps)
        "task.eval_every": (375, f"{LO}:54"),  # val_check_interval 0.25 of 1500 steps
        "trainer.max_steps": (120000, f"{LO}:53"),  # 80 epochs of 96,000 / 64
        "model.dim": (80, f"{LO}:9"),
        "model.depth": (6, f"{LO}:8-25"),
        "model.num_heads": (4, f"{LO}:9"),
        "model.ffn_dim": (160, f"{LO}:9"),
        "model.classifier_dim": ([], f"{LO}:31"),  # num_hidden_layers 0: one Linear
    },
    "text": {
        "model.position": ("rope", f"{TX}:10"),  # attention_params type rotary
        "model.cls_token": (True, "src/data_loaders/text_classification.py:72"),
        "model.pooling": ("mean", f"{TX}:27"),  # reduction_method mean
        "model.dropout": (0.1, f"{TX}:9"),
        "protocol.clip": (None, f"{TX}:45-52"),  # trainer_params: no gradient_clip_val
        "protocol.tested": ("best", f"{TEXT_T}:162-166"),  # ModelCheckpoint, monitor val acc, mode max
        "protocol.adam_betas": ([0.9, 0.98], f"{TX}:42"),
        "task.batch_size": (32, f"{TX}:34"),
        "task.lr": (4e-3, f"{TX}:40"),
        "task.weight_decay": (0.01, f"{TX}:41"),
        "task.warmup_steps": (0, f"{TEXT_T}:143"),  # LinearLR(start_factor=1.): no warm-up
        "task.eval_every": (703, f"{TX}:45-52"),  # Lightning's default: once an epoch, 22,500 / 32
        "trainer.max_steps": (42180, f"{TX}:46"),  # 60 epochs
        "model.dim": (128, f"{TX}:9"),
        "model.depth": (4, f"{TX}:8-19"),
        "model.num_heads": (8, f"{TX}:9"),
        "model.ffn_dim": (256, f"{TX}:9"),
        "model.classifier_dim": ([], f"{TX}:25"),  # num_hidden_layers 0: one Linear
    },
    "retrieval": {
        "model.position": ("rope", f"{RT}:10"),  # attention_params type rotary
        "model.cls_token": (True, "src/data_loaders/text_retrieval.py:75"),
        "model.pooling": ("mean", f"{RT}:33"),  # reduction_method mean
        "model.dropout": (0.1, f"{RT}:9"),
        "protocol.clip": (None, f"{RT}:52-59"),  # trainer_params: no gradient_clip_val
        "protocol.tested": ("best", f"{TEXT_T}:162-166"),  # ModelCheckpoint, monitor val acc, mode max
        "protocol.adam_betas": ([0.9, 0.98], f"{RT}:49"),
        "task.batch_size": (64, f"{RT}:41"),  # pairs: two documents each (text_retrieval.py:65)
        "task.lr": (1e-3, f"{RT}:47"),
        "task.weight_decay": (0.01, f"{RT}:48"),
        "task.warmup_steps": (0, f"{TEXT_T}:143"),
        "task.eval_every": (2298, f"{RT}:52-59"),  # once an epoch: 147,086 / 64
        "trainer.max_steps": (91920, f"{RT}:53"),  # 40 epochs
        "model.dim": (128, f"{RT}:9"),
        "model.depth": (6, f"{RT}:8-25"),
        "model.num_heads": (4, f"{RT}:9"),
        "model.ffn_dim": (256, f"{RT}:9"),
        "model.classifier_dim": ([512], f"{RT}:30-31"),  # ff_dim 512, num_hidden_layers 1
        "model.dual_features": ("nli", "src/heads/feature_applier.py:32-34"),  # theirs [u, v, u*v]: nearest
    },
    "image": {
        "model.position": ("rope", f"{IM}:9"),  # attention_params type rotary
        "model.cls_token": (True, "src/data_loaders/cifar10.py:45"),
        "model.pooling": ("mean", f"{IM}:32"),  # reduction_method mean
        "model.dropout": (0.0, f"{IM}:8"),
        "protocol.clip": (None, f"{IM}:50-57"),  # trainer_params: no gradient_clip_val
        "protocol.tested": ("best", f"{IMAGE_T}:125-129"),  # ModelCheckpoint, monitor val acc, mode max
        "protocol.adam_betas": ([0.9, 0.98], f"{IM}:47"),
        "task.batch_size": (32, f"{IM}:39"),
        "task.lr": (5e-4, f"{IM}:46"),
        "task.weight_decay": (0.0, f"{IM}:48"),
        "task.warmup_steps": (0, f"{IMAGE_T}:106"),  # LinearLR(start_factor=1.): no warm-up
        "task.eval_every": (1406, f"{IM}:50-57"),  # once an epoch: 45,000 / 32
        "trainer.max_steps": (281200, f"{IM}:51"),  # 200 epochs
        "model.dim": (160, f"{IM}:8"),
        "model.depth": (8, f"{IM}:8-23"),
        "model.num_heads": (4, f"{IM}:8"),
        "model.ffn_dim": (320, f"{IM}:8"),
        "model.classifier_dim": ([], f"{IM}:29"),
    },
    "pathfinder": {
        "model.position": ("rope", f"{PF}:10"),  # attention_params type rotary
        "model.cls_token": (True, "src/data_loaders/pathfinder.py:90"),
        "model.pooling": ("mean", f"{PF}:33"),  # reduction_method mean
        "model.dropout": (0.0, f"{PF}:9"),
        "protocol.clip": (None, f"{PF}:55-62"),  # trainer_params: no gradient_clip_val
        "protocol.tested": ("best", f"{PATHFINDER_T}:132-136"),  # ModelCheckpoint, monitor val acc, mode max
        "protocol.adam_betas": ([0.9, 0.98], f"{PF}:52"),
        "task.batch_size": (128, f"{PF}:44"),
        "task.lr": (1e-3, f"{PF}:51"),
        "task.weight_decay": (0.01, f"{PF}:53"),
        "task.warmup_steps": (12500, f"{PATHFINDER_T}:111"),  # int(0.1 * 100 epochs * 1250 steps)
        "task.eval_every": (1250, f"{PF}:55-62"),  # once an epoch: 160,000 / 128
        "trainer.max_steps": (125000, f"{PF}:56"),  # 100 epochs
        "model.dim": (128, f"{PF}:9"),
        "model.depth": (6, f"{PF}:8-25"),
        "model.num_heads": (4, f"{PF}:9"),
        "model.ffn_dim": (256, f"{PF}:9"),
        "model.classifier_dim": ([], f"{PF}:31"),
    },
}

OFFICIAL = {task: SHARED | values for task, values in TASKS.items()}
