"""What learns: the encoder and its attention layers (``encoder``), its poolings and heads (``heads``),
the LightningModule of fine-tuning (``module``) and its learning-rate schedules (``schedules``), and the
self-pretraining objective with its inputs (``pretraining``).

Each part is built from its own record of ``lra.config.records``. May import ``lra.config``,
``lra.data`` and ``attention_zoo``; nothing of a job's life (``lra.job``).
"""
