"""deja: a local memory for AI coding agents.

The package root is a thin namespace: the version, and the front door
(deja.pipeline.api) under its own names: ``deja.search(...)``, ``deja.index()``.
"""

__version__ = "0.1.0"
