// One chart row from one /api/v1/stats snapshot: the figures the charts draw.
// Counters (totals since start) become per-second rates against the previous
// snapshot; gauges are taken as they are.

function rate(now, before, key, pick) {
  if (!before) return null;
  const seconds = (now.time - before.time) / 1000;
  const delta = pick(now.stats) - pick(before.stats);
  // A broker restarted between two polls resets its counters: no rate then.
  return seconds > 0 && delta >= 0 ? delta / seconds : null;
}

export function figures(stats, previous, time) {
  const current = { stats, time };
  return {
    in: rate(current, previous, "in", (s) => s.messages.received),
    out: rate(current, previous, "out", (s) => s.messages.sent),
    dropped: rate(current, previous, "dropped", (s) => s.messages.dropped),
    connected: stats.connections.current,
    offline: stats.sessions.offline,
    queued: stats.queues.messages,
    inflight: stats.queues.inflight,
    fsync_mean: stats.fsync ? stats.fsync.mean_ms : null,
    fsync_max: stats.fsync ? stats.fsync.max_ms : null,
  };
}
