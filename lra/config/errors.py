"""Errors whose message says all there is to say: a run reports them as one line, without a traceback."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration that cannot run; the message says which key and what is valid."""


class CorruptCheckpointError(ValueError):
    """A checkpoint whose size or SHA-256 differs from the one recorded when it was written."""


class RunFolderBusy(RuntimeError):
    """Another live process writes the run folder; the message names its pid and host."""


class OutputFolderError(ConfigError):
    """An output folder that cannot be created or written; the message names it and the option that
    chooses another."""

    @classmethod
    def of(cls, error: OSError, option: str) -> OutputFolderError:
        """The one line for ``error`` (an ``OSError`` naming a path) met while making an output folder
        that ``option`` chooses (``--out``, ``hydra.run.dir``)."""
        reason = error.strerror or str(error)
        return cls(f"cannot write to {error.filename}: {reason}; choose another folder with {option}")
