"""The one-line input error, at the bottom of the package so that any module may raise it (config re-exports it:
`from semifl_core.config import ConfigError` is the usual spelling)."""


class ConfigError(ValueError):
    """A config field, or another setting (an engine.Speed switch, a parameter), has a value that is not allowed. The
    message is one line."""
