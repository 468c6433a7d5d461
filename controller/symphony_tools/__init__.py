"""Test, benchmark and build helpers for Symphony's repository: not part of the controller.

The runtime package (`symphony`) never imports this one. These modules know the repository's
layout (bmv2_env/, run/, the committed stubs) and drive a switch from synchronous code, which the
PTF suite, bench/ and evaluation/ need and the daemon does not.
"""
