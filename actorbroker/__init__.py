"""actorbroker: an MQTT 3.1, 3.1.1 and 5.0 broker built on supervised pykka actors.

Top-level package; it imports nothing at import time so that ``actorbroker.codec``
can be used on its own (stdlib only).
"""

__version__ = "0.1.0"
