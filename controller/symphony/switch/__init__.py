"""Switch side: P4Runtime sessions, desired entries, register access per target."""
