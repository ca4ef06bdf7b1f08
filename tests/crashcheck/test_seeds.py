"""CI seeds of the crash checker (``python -m tests.crashcheck --seed N`` replays one).

Each seed draws clients, behaviours and a crash plan (tests/crashcheck/scenario.py);
the run fails on any violation of the model (model.py): an acknowledged message
lost, a QoS 2 duplicate, order per publisher broken, a failed restart, a session
the broker claimed and did not have. Seeds run without and with power loss.
"""

from __future__ import annotations

import pytest

from tests.crashcheck.run import run

# Chosen to cover together: MQTT 3.1.1 and 5, QoS 1 and 2, every ack behaviour and way to
# leave, Clean Start comebacks, Receive Maximum, Wills, a shared group, the queue limit,
# retention, the backlog client, and crashes by SIGKILL and SIGTERM on every trigger
# (python -m tests.crashcheck --seed N --describe shows a scenario). 524474476: a shared
# group's member stopped by SIGTERM with messages queued, which lost them before the
# hand-back's records went into one append (docs/storage.md, "Testing durability").
SEEDS = [205, 206, 215, 218, 220, 221, 223, 224, 226, 524474476]
# Power loss: each fails when the broker acknowledges before the fdatasync (tried by hand:
# actors/sessions/journal/log.py on_reply storing at Durable(synced=False)): 327 and 343 lost
# acknowledged messages in each of two tries, 269 in one; all pass on the real code.
# 1093449900: a queue limit of 55 under a resumed durable queue, whose chunks of 64 dropped
# messages from the middle of the queue (failed 6 runs in 7 before ResumedQueue.pump
# fetched only what the limits have room for).
# 639277478: a SIGTERM while a shared group's members were between actors settled QoS 2
# messages as undeliverable (lost 1-3 in 2 runs of 3 before topic.TopicActor._owe).
POWER_LOSS_SEEDS = [213, 269, 327, 343, 1093449900, 639277478]


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("seed,power_loss", [(s, False) for s in SEEDS]
                         + [(s, True) for s in POWER_LOSS_SEEDS])
def test_seed(seed: int, power_loss: bool) -> None:
    result = run(seed, power_loss=power_loss)
    print(result.report())
    assert not result.failed, result.report()
