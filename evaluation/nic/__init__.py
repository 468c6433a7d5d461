"""The RDMA NIC, declared once: the reaction point's rules (`reaction_point.py`) that the emulated
hosts run as they are and that the fabric kernel is held equal to by `conformance.py`."""
