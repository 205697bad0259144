"""The one-line input error, at the bottom of the package so that any module may raise it (config re-exports it)."""


class ConfigError(ValueError):
    """A setting (a config field, an engine.Speed switch, a parameter) has a disallowed value; one-line message."""
