"""A quiet console: no advert or note that says nothing about the run, stage titles, an honest Ctrl+C."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import lightning as L
import pytest
import torch
from conftest import compose_config, tiny_data_overrides
from helpers.python_m_lra import python_m_lra
from lightning.pytorch.loggers import CSVLogger
from omegaconf import OmegaConf

from lra.job.console import QuietNotes
from lra.job.job_state import JobState
from lra.job.loggers import RunIdentity, build_wandb
from lra.job.progress_bar import PRETRAINING, StageProgressBar
from lra.job.resolve import job_records
from lra.job.train import build_trainer

REPO = Path(__file__).resolve().parent.parent


class Recorded(logging.Handler):
    """Keeps the messages that pass its filters."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def console():
    """A handler on the root logger with the console's filter, as conf/config.yaml sets it."""
    handler, root = Recorded(), logging.getLogger()
    handler.addFilter(QuietNotes())
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


def test_the_console_handler_carries_the_filter():
    logging_config = OmegaConf.load(REPO / "conf" / "config.yaml").hydra.job_logging
    assert logging_config.filters.quiet_notes["()"] == "lra.job.console.QuietNotes"
    assert list(logging_config.handlers.console.filters) == ["quiet_notes"]


def test_the_default_trainer_prints_no_advert_and_no_batch_note(console, tmp_path):
    trainer = compose_config(["trainer=auto"]).trainer
    options = {key: trainer[key] for key in ("limit_val_batches", "limit_test_batches")}
    assert options == {"limit_val_batches": None, "limit_test_batches": None}  # Lightning's default: no note
    L.Trainer(logger=CSVLogger(tmp_path), accelerator="cpu", **options)
    assert any(message.startswith("GPU available") for message in console.messages)  # the rest still shows
    assert not any("litlogger" in message or "was configured" in message for message in console.messages)
    L.Trainer(logger=False, accelerator="cpu", limit_val_batches=1, limit_test_batches=1.0)  # trainer=smoke's
    assert not any("was configured" in message for message in console.messages)


def test_the_wandb_logger_sets_no_dropped_setting(tmp_path):
    options = OmegaConf.create({"project": "p", "entity": None, "mode": "offline"})
    run = RunIdentity("listops", "standard", 0, "abc", {}, None, False)
    logger = build_wandb(options, run, tmp_path, None)
    assert "anonymous" not in logger._wandb_init


class TinyModule(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, index):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_each_stage_titles_its_bar(tmp_path):
    bar = StageProgressBar(PRETRAINING)
    trainer = L.Trainer(
        accelerator="cpu",
        max_steps=1,
        logger=False,
        callbacks=[bar],
        default_root_dir=tmp_path,
        enable_checkpointing=False,
    )
    trainer.fit(TinyModule(), torch.utils.data.DataLoader(torch.randn(4, 2)))
    assert bar.train_progress_bar.desc.startswith("Pretraining (epoch 0)")


def fine_tuning(step: int, best: float | None) -> SimpleNamespace:
    """Stand-in ``TrainerParts`` at ``step`` with a best validation accuracy ``best``."""
    score = None if best is None else torch.tensor(best)
    return SimpleNamespace(
        trainer=SimpleNamespace(global_step=step), checkpoint=SimpleNamespace(best_model_score=score)
    )


def test_an_interruption_names_its_step_and_best_validation(tmp_path):
    state = JobState(tmp_path, "now")
    assert state.interruption(tmp_path / "checkpoints") == "Ctrl+C before training began"
    state.parts = fine_tuning(120, 0.4125)
    assert state.interruption(tmp_path / "checkpoints") == (
        f"Ctrl+C at step 120, best val/acc 41.25%; the state is saved in {tmp_path / 'checkpoints'}: "
        "resume=auto continues"
    )
    assert state.reached() == {"train/steps": 120, "val/acc_best": pytest.approx(0.4125)}
    state.parts = fine_tuning(1, None)
    assert state.stopped_at() == "step 1, before its first validation" and state.reached() == {
        "train/steps": 1
    }


@pytest.mark.slow  # trains in a subprocess
def test_ctrl_c_prints_the_step_and_the_best_validation(data_root, tmp_path):
    signal = [
        "+callbacks.signal._target_=helpers.signal_at_step.SignalAtStep",
        "+callbacks.signal.step=3",
        "+callbacks.signal.signal=SIGINT",
        f"+callbacks.signal.once={tmp_path / 'sent'}",
    ]
    args = [
        "attention=standard",
        *tiny_data_overrides(data_root, "trainer.max_steps=6", "task.eval_every=2"),
        *signal,
    ]
    result = python_m_lra(args, tmp_path)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("lra: interrupted: SIGINT at step 3, best val/acc "), result.stderr[-3000:]
    assert "was raised with message" not in result.stdout + result.stderr
    row = next(line.split() for line in result.stdout.splitlines() if line.startswith("listops "))
    assert row[4] == "interrupted" and row[5].endswith("%")  # the best validation so far, not "-"


@pytest.mark.parametrize(("pretrained", "title"), [(False, "Training"), (True, "Fine-tuning")])
def test_a_run_without_pretraining_trains_under_its_own_title(tmp_path, pretrained, title):
    records = job_records(compose_config(["experiment=demo"]))
    parts = build_trainer(records.trainer, tmp_path, [], pretrained)
    [bar] = [callback for callback in parts.trainer.callbacks if isinstance(callback, StageProgressBar)]
    assert bar.title == title
