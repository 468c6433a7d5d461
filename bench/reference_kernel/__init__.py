"""The fabric kernel and its glue at git revision 113030d, before issue 22's speed work:
bench/fabric_speed.py runs it beside today's, side by side in one process."""
