"""flower's language server: the engine mapped onto LSP for any editor."""

__version__ = "0.1.0"
