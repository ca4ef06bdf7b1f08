"""Pipeline layer: the errors of the data pipeline. Imports actorbroker.errors only.

Every failure an operator can fix (no data dir, no Java, a bad master URL,
records lost to retention under a running stream) is a
:class:`PipelineError` whose message says what to do; the CLI prints it on
one line and exits 1. pyspark wraps errors raised on executors in its own
exceptions: the message is kept, so tests and users match on it.
"""

from __future__ import annotations

from actorbroker.errors import BrokerError

__all__ = ["DataLossError", "PipelineError"]


class PipelineError(BrokerError):
    """The pipeline cannot run as asked; the message says why and what to change."""


class DataLossError(PipelineError):
    """Records a stream still had to read were deleted (retention) before it read them."""
