// One chart row from one /api/v1/stats snapshot: the figures the charts draw.
// The broker keeps the per-second rates itself (one sampler for every poller),
// so two dashboards open at once see the same rates.

const ms = (seconds) => (Number.isFinite(seconds) ? seconds * 1000 : null);

export function figures(stats) {
  const rates = stats.rates || {};
  const fsync = stats.fsync || {};
  return {
    in: rates.publish_received,
    out: rates.publish_sent,
    dropped: rates.dropped_total,
    connected: stats.connections.clients,
    offline: stats.sessions.offline,
    queued: stats.queues.messages,
    inflight: stats.queues.inflight,
    stored: stats.queues.offline_stored,
    // No sync yet (or the memory log): no line, rather than a line at zero.
    fsync_mean: fsync.count ? ms(fsync.mean) : null,
    fsync_p99: fsync.count ? ms(fsync.p99) : null,
  };
}
