"""One adapter per implementation of Symphony's per-packet algorithm (`Implementation`)."""
