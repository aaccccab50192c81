"""Errors whose message says all there is to say: a run reports them as one line, without a traceback."""


class ConfigError(ValueError):
    """A configuration that cannot run; the message says which key and what is valid."""


class CorruptCheckpointError(ValueError):
    """A checkpoint whose size or SHA-256 differs from the one recorded when it was written."""


class RunFolderBusy(RuntimeError):
    """Another live process writes the run folder; the message names its pid and host."""
