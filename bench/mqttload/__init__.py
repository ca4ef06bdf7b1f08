"""Load generator for the broker benchmarks: raw MQTT 3.1.1 over uvloop, several processes.

Benchmark harness, not part of the installed package. May import the
stdlib, asyncio, uvloop and ``actorbroker.codec`` (nothing else of the
broker), so that it measures any MQTT broker the same way.

    wire      pre-encoded packets and PUBLISH batches patched in place
    stats     per-publisher delivery accounting, latency histograms
    clients   asyncio protocols: publisher, subscriber, idle connection
    plan      what each worker process does (frozen, pickled at spawn)
    workers   worker process entry point (start barrier, bounded loops)
    driver    run_load(plan): spawn, synchronise, collect, check deliveries
    sink      trivial peer for the self-test (bench/selftest.py)
"""
