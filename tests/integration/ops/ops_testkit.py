"""Helpers of the ops tests: an HTTP client with JSON helpers, /metrics parsed.

Import it as ``from ops_testkit import ...`` (this folder's conftest puts it on
the path: tests run with --import-mode=importlib).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

TIMEOUT = 10.0


class Http:
    """JSON over urllib; ``token`` goes in an Authorization header."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token

    def call(self, method: str, url: str, body: Any = None, *,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        if self.token is not None:
            request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                raw = response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            raw, status = exc.read(), exc.code
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode()

    def get(self, url: str) -> Any:
        status, body = self.call("GET", url)
        assert status == 200, (status, body)
        return body


def scrape(url: str) -> dict[tuple[str, ...], float]:
    """``/metrics`` as {(sample name, label values sorted by label name...): value}."""
    with urllib.request.urlopen(url + "/metrics", timeout=TIMEOUT) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    out: dict[tuple[str, ...], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, *(f"{k}={v}" for k, v in sorted(sample.labels.items())))
            out[key] = sample.value
    return out
