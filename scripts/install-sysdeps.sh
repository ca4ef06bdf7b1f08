#!/usr/bin/env bash
# Installs the Debian packages the test suite and tools need, only those missing.
#   graphviz           renders docs/statecharts/*.svg from the transition tables
#   mosquitto-clients  mosquitto_pub/mosquitto_sub, real clients in integration tests
#   mosquitto          the reference broker that bench/ runs side by side with ours
#   openssl            the CLI: tests make their certificate authorities with it and
#                      probe tls listeners with `openssl s_client`
#   chromium           the headless browser that runs MQTT.js in
#                      tests/integration/listeners/test_listeners_browser.py
#   default-jre-headless  Java for Spark (actorbroker.pipeline, tests/pipeline): Spark 4
#                      runs on Java 17 or 21, Debian's default JRE (17 on bookworm)
set -euo pipefail
need=()
command -v dot >/dev/null || need+=(graphviz)
command -v mosquitto_pub >/dev/null || need+=(mosquitto-clients)
[ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v openssl >/dev/null || need+=(openssl)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v java >/dev/null || [ -x "${JAVA_HOME:-/nonexistent}/bin/java" ] || need+=(default-jre-headless)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing system packages: ${need[*]} (run as root or install them)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  echo "installed: ${need[*]}"
fi
