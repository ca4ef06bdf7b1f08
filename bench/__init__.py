"""Benchmarks of actorbroker: plain scripts run as ``python -m bench.NAME``.

Not part of the installed package. Each module prints figures and asserts
nothing; ``python -m bench.run`` runs the broker-level comparison with
Mosquitto and amqtt (see docs/benchmarks.md).
"""
