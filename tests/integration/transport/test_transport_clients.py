"""Real MQTT clients against the listener: paho-mqtt (3.1.1 and 5) and mosquitto_pub.

The test gateway answers SUBSCRIBE with SUBACK and echoes QoS 0 PUBLISHes
back to their sender, which is enough for a client library to complete
its handshakes and see its own message come back.
"""

from __future__ import annotations

import asyncio
import shutil
import threading

import paho.mqtt.client as paho
import pytest
from transport_testkit import Broker

from actorbroker.codec import Disconnect, Publish


@pytest.mark.parametrize("version", [paho.MQTTv311, paho.MQTTv5], ids=["3.1.1", "5"])
def test_paho_connects_subscribes_and_gets_its_echo(run, version) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            loop = asyncio.get_running_loop()
            got: list[bytes] = []
            connected, subscribed, received = threading.Event(), threading.Event(), threading.Event()
            client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="paho",
                                 protocol=version)
            client.on_connect = lambda *args: connected.set()
            client.on_subscribe = lambda *args: subscribed.set()
            client.on_message = lambda c, u, msg: (got.append(msg.payload), received.set())
            client.connect("127.0.0.1", broker.listener.port, keepalive=30)
            client.loop_start()
            try:
                assert await loop.run_in_executor(None, connected.wait, 5)  # CONNACK
                client.subscribe("echo/#", 0)
                assert await loop.run_in_executor(None, subscribed.wait, 5)  # SUBACK
                client.publish("echo/1", b"hello", qos=0)
                assert await loop.run_in_executor(None, received.wait, 5)
                assert got == [b"hello"]
                port = await broker.gateway.port()
                assert port.conn.protocol_level == (5 if version == paho.MQTTv5 else 4)
                client.disconnect()
                await port.wait_until(lambda: port.lost)
                assert port.lost[0].graceful
            finally:
                client.loop_stop()
    run(scenario())


@pytest.mark.skipif(shutil.which("mosquitto_pub") is None, reason="mosquitto-clients not installed")
@pytest.mark.parametrize("version", ["mqttv311", "mqttv5"])
def test_mosquitto_pub(run, version) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            proc = await asyncio.create_subprocess_exec(
                "mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker.listener.port),
                "-V", version, "-i", "mpub", "-t", "sensors/1", "-m", "21.5")
            assert await asyncio.wait_for(proc.wait(), 10) == 0
            port = await broker.gateway.port()
            await port.wait_until(lambda: port.lost)
            assert port.packets[0] == Publish("sensors/1", b"21.5")
            assert isinstance(port.packets[-1], Disconnect)
            assert port.lost[0].graceful
    run(scenario())
