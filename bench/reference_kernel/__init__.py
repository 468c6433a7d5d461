"""The fabric kernel of git revision 113030d, before issue 22's speed work (kernel.py), and
the adapter that runs it behind today's inputs: bench/fabric_speed.py runs it beside today's,
side by side in one process."""
