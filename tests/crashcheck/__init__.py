"""A Jepsen-style randomized crash checker for actorbroker: ``python -m tests.crashcheck --seed N``.

Each seed draws a scenario (scenario.py): MQTT 3.1.1 and 5.0 clients with
persistent sessions, QoS 1 and 2, acks immediate, paced, delayed, withheld
or out of order, connections ended by DISCONNECT, half-close, RST or
silence, comebacks with and without Clean Start, Receive Maximum, Session
Expiry, overlapping filters, ``$share`` groups, Wills; and a broker (small
segments and checkpoints) stopped by kill -9 and SIGTERM at drawn instants
and started again on the same data directory (broker.py), optionally with
power loss (powerloss.py, shim.py). The model (model.py) then checks that
nothing acknowledged was lost, no QoS 2 message came twice, order per
publisher held, every restart worked and every session the broker said was
present was. Modules: scenario, client, publisher, subscriber, model,
broker, powerloss, shim, run, __main__ (the command line, soak included).
"""
