"""The index pipeline and the command line: the top floor (see docs/architecture.md)."""
