"""Symphony: per-job step tracking and selective ECN throttling for ring collectives."""

__version__ = "0.1.0"
