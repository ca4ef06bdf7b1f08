"""Will Delay Interval and its interplay with session expiry; DISCONNECT 0x04."""

from __future__ import annotations

from collections.abc import Callable

from mqtt5_testkit import Client5

Clients5 = Callable[..., Client5]


def will(delay: int | None = None) -> tuple[str, bytes, int, bool, dict[str, object]]:
    props: dict[str, object] = {} if delay is None else {"WillDelayInterval": delay}
    return ("status/dev", b"offline", 1, False, props)


def watcher(client5: Clients5) -> Client5:
    w = client5("watcher")
    w.subscribe("status/dev", 1)
    return w


def test_a_delayed_will_is_published_after_its_delay(client5: Clients5) -> None:
    w = watcher(client5)
    dev = client5("dev", connect=False, will=will(1))
    dev.connect(SessionExpiryInterval=60)
    dev.drop()
    client5("p").publish("status/dev", b"before the delay", 1)
    assert w.expect().payload == b"before the delay"  # the Will waits
    assert w.expect(timeout=5).payload == b"offline"


def test_reconnecting_within_the_delay_cancels_the_will(client5: Clients5) -> None:
    w = watcher(client5)
    dev = client5("dev", connect=False, will=will(2))
    dev.connect(SessionExpiryInterval=60)
    dev.drop()
    back = client5("dev", connect=False)
    assert back.connect(clean_start=False, SessionExpiryInterval=60).session_present
    # Past the delay: only the marker arrives ([MQTT-3.1.3-9]).
    import threading
    threading.Event().wait(2.5)
    client5("p").publish("status/dev", b"marker", 1)
    assert w.expect().payload == b"marker"


def test_the_session_ending_first_publishes_the_will(client5: Clients5) -> None:
    w = watcher(client5)
    dev = client5("dev", connect=False, will=will(60))
    dev.connect(SessionExpiryInterval=1)  # the session ends after 1 s: the Will then
    dev.drop()
    assert w.expect(timeout=5).payload == b"offline"


def test_no_delay_publishes_at_once(client5: Clients5) -> None:
    w = watcher(client5)
    dev = client5("dev", connect=False, will=will())
    dev.connect(SessionExpiryInterval=60)
    dev.drop()
    assert w.expect().payload == b"offline"


def test_disconnect_with_will_message_publishes_it(client5: Clients5) -> None:
    w = watcher(client5)
    dev = client5("dev", connect=False, will=will())
    dev.connect()
    dev.disconnect(reason_code=0x04)
    assert w.expect().payload == b"offline"


def test_a_normal_disconnect_discards_the_will(client5: Clients5) -> None:
    w = watcher(client5)
    dev = client5("dev", connect=False, will=will())
    dev.connect()
    dev.disconnect()
    client5("p").publish("status/dev", b"marker", 1)
    assert w.expect().payload == b"marker"
