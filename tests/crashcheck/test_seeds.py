"""CI seeds of the crash checker (``python -m tests.crashcheck --seed N`` replays one).

Each seed draws clients, behaviours and a crash plan (tests/crashcheck/scenario.py);
the run fails on any violation of the model (model.py): an acknowledged message
lost, a QoS 2 duplicate, order per publisher broken, a failed restart, a session
the broker claimed and did not have. Seeds run without and with power loss.
"""

from __future__ import annotations

import pytest

from tests.crashcheck.run import run

SEEDS = [3, 5]
POWER_LOSS_SEEDS: list[int] = []


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("seed,power_loss", [(s, False) for s in SEEDS]
                         + [(s, True) for s in POWER_LOSS_SEEDS])
def test_seed(seed: int, power_loss: bool) -> None:
    result = run(seed, power_loss=power_loss)
    print(result.report())
    assert not result.failed, result.report()
