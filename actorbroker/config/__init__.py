"""Configuration layer: actorbroker.toml, loaded into frozen dataclasses. Imports the stdlib and actorbroker.errors only.

    from actorbroker.config import Config, load
    config = load("actorbroker.toml").with_overrides(port=1884)
    config.listeners[0].port, config.limits.max_qos, config.node.data_dir

``load``/``loads`` raise :class:`~actorbroker.errors.InvalidConfigError` whose
``errors`` lists every :class:`~actorbroker.errors.ConfigError` found, each with
its 1-based ``line``; ``check`` returns that list instead. ``Config()`` is the
defaults. The options, their defaults and their help live in :mod:`.schema`;
docs/configuration.md and docs/actorbroker.example.toml are generated from it
(``python -m actorbroker.config --write``).
"""

from __future__ import annotations

from actorbroker.errors import ConfigError, InvalidConfigError

from .loader import check, load, loads
from .options import Option
from .render import describe, render_example, render_markdown
from .http import HttpConfig, is_loopback
from .mqtt5 import AuthConfig, Mqtt5Config
from .schema import (
    OVERRIDES,
    SECTIONS,
    SERVE_DATA_DIR,
    Config,
    LimitsConfig,
    ListenerConfig,
    LogConfig,
    NodeConfig,
    RetainedConfig,
    RetryConfig,
    Section,
    StorageConfig,
    SysConfig,
)

__all__ = [
    "OVERRIDES",
    "SECTIONS",
    "SERVE_DATA_DIR",
    "AuthConfig",
    "Config",
    "ConfigError",
    "HttpConfig",
    "InvalidConfigError",
    "LimitsConfig",
    "ListenerConfig",
    "LogConfig",
    "Mqtt5Config",
    "NodeConfig",
    "Option",
    "RetainedConfig",
    "RetryConfig",
    "Section",
    "StorageConfig",
    "SysConfig",
    "check",
    "describe",
    "is_loopback",
    "load",
    "loads",
    "render_example",
    "render_markdown",
]
