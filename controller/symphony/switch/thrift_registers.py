"""bmv2's Thrift runtime API: registers, counters and egress queues.

bmv2's P4Runtime server does not implement register reads or writes (p4lang/PI#376), so on bmv2
Symphony's per-job state is read and reset here. The Thrift client modules (`bm_runtime`,
`sswitch_runtime`) are installed by bmv2 itself, next to `simple_switch_CLI`, for the Python that
bmv2 was configured with; `find_bmv2_python_modules` locates them.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from typing import Any

from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.transport import TSocket, TTransport

_ENV = "SYMPHONY_BMV2_PYTHONPATH"


class Bmv2ThriftUnavailable(RuntimeError):
    """bmv2's Thrift client modules could not be imported."""


def find_bmv2_python_modules() -> str | None:
    """Directory that holds bmv2's `bm_runtime` package, or None.

    Looks at $SYMPHONY_BMV2_PYTHONPATH, then asks the python3 that simple_switch_CLI runs on,
    then common install prefixes.
    """
    candidates = [os.environ.get(_ENV, "")]
    if shutil.which("simple_switch_CLI") and shutil.which("python3"):
        probe = (
            "import bm_runtime, os; print(os.path.dirname(os.path.dirname(bm_runtime.__file__)))"
        )
        try:
            out = subprocess.run(
                ["python3", "-c", probe], capture_output=True, text=True, timeout=20, check=False
            )
            candidates.append(out.stdout.strip())
        except (OSError, subprocess.TimeoutExpired):
            pass
    for prefix in ("/opt/p4", "/usr/local", "/usr"):
        candidates += glob.glob(f"{prefix}/lib/python3*/site-packages")
        candidates += glob.glob(f"{prefix}/lib/python3*/dist-packages")
    for path in candidates:
        if path and os.path.isfile(os.path.join(path, "bm_runtime", "__init__.py")):
            return path
    return None


def _import_clients() -> tuple[Any, Any]:
    try:
        from bm_runtime.standard import Standard
        from sswitch_runtime import SimpleSwitch
    except ImportError:
        path = find_bmv2_python_modules()
        if path is None:
            raise Bmv2ThriftUnavailable(
                "bmv2's Thrift Python modules (bm_runtime) were not found: install bmv2 or set "
                f"{_ENV} to the directory that contains bm_runtime/"
            ) from None
        # Appended, not prepended: bmv2's directory must not shadow our own dependencies.
        sys.path.append(path)
        from bm_runtime.standard import Standard
        from sswitch_runtime import SimpleSwitch
    return Standard, SimpleSwitch


class Bmv2Thrift:
    """One Thrift session to a bmv2 switch (simple_switch / simple_switch_grpc)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 9090, timeout_s: float = 10.0):
        standard, simple_switch = _import_clients()
        sock = TSocket.TSocket(host, port)
        sock.setTimeout(int(timeout_s * 1000))
        self._transport = TTransport.TBufferedTransport(sock)
        # The accelerated protocol decodes in C when thrift's fastbinary extension is there (pure
        # Python otherwise): a whole register array is 16384 values.
        protocol = TBinaryProtocol.TBinaryProtocolAccelerated(self._transport)
        self._transport.open()
        self._std = standard.Client(TMultiplexedProtocol.TMultiplexedProtocol(protocol, "standard"))
        self._ss = simple_switch.Client(
            TMultiplexedProtocol.TMultiplexedProtocol(protocol, "simple_switch")
        )
        self.address = f"{host}:{port}"

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Bmv2Thrift:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Registers ------------------------------------------------------------------------------
    def register_read(self, name: str, index: int) -> int:
        return int(self._std.bm_register_read(0, name, index))

    def register_read_all(self, name: str) -> list[int]:
        return [int(v) for v in self._std.bm_register_read_all(0, name)]

    def register_write(self, name: str, index: int, value: int) -> None:
        self._std.bm_register_write(0, name, index, value)

    def register_reset(self, name: str) -> None:
        self._std.bm_register_reset(0, name)

    # Counters -------------------------------------------------------------------------------
    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(bytes, packets) of one counter cell."""
        v = self._std.bm_counter_read(0, name, index)
        return int(v.bytes), int(v.packets)

    def counter_write(self, name: str, index: int, packets: int = 0, nbytes: int = 0) -> None:
        from bm_runtime.standard.ttypes import BmCounterValue

        self._std.bm_counter_write(0, name, index, BmCounterValue(bytes=nbytes, packets=packets))

    def counter_reset(self, name: str) -> None:
        self._std.bm_counter_reset_all(0, name)

    # Egress queues (simple_switch) ----------------------------------------------------------
    def set_queue_rate(self, rate_pps: int, port: int | None = None) -> None:
        """Packets per second each egress queue drains at: queues only build up with a rate."""
        if port is None:
            self._ss.set_all_egress_queue_rates(rate_pps)
        else:
            self._ss.set_egress_queue_rate(port, rate_pps)

    def set_queue_depth(self, depth_pkts: int, port: int | None = None) -> None:
        if port is None:
            self._ss.set_all_egress_queue_depths(depth_pkts)
        else:
            self._ss.set_egress_queue_depth(port, depth_pkts)
