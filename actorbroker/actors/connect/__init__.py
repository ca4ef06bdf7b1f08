"""Actors layer: from an accepted CONNECT to a session actor, and the listeners. Imports as :mod:`actorbroker.actors` does.

* :mod:`.gateway`: :class:`~.gateway.SessionGateway`, the transport's
  ``Gateway``: finds or starts the session and hands it the connection;
* :mod:`.login`: who may connect, as whom, with which client id and Will;
  :mod:`.password_checks`: password hashes checked off the event loop;
  :mod:`.owners`: which user each session belongs to;
* :mod:`.enhanced_auth`: MQTT 5 enhanced authentication (AUTH) at CONNECT
  and re-authentication;
* :mod:`.acl_reload`: the ``auth files`` reload of a running node;
* :mod:`.listener`: :class:`~.listener.ListenerActor`, one network listener.

Which rule refuses a CONNECT, and in which order: :mod:`actorbroker.session.connect`.
"""
