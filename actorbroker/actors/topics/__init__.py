"""Actors layer: subscriptions, retained messages and the topic actors that route a publish. Imports as :mod:`actorbroker.actors` does.

* :mod:`.registry`: :class:`~.registry.RegistryActor`, the node's
  subscription table, retained index and topic actors; its subscription
  work in slices (:mod:`.registry_slices`) and its commit log half
  (:mod:`.registry_journal`);
* :mod:`.topic`: :class:`~.topic.TopicActor`, one per concrete topic;
  :mod:`.topic_table`: the registry's table of them and which topics are hot;
* :mod:`.subscribers`: the plain subscribers of one topic and their delivery;
  :mod:`.grants`: one client's subscription as routing needs it;
* :mod:`.shared_groups`: MQTT 5 shared subscriptions;
* :mod:`.sys_topics`: :class:`~.sys_topics.SysActor`, the ``$SYS`` topics.
"""
