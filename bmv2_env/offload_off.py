#!/usr/bin/env python3
"""Turn off segmentation and receive offloads on the given interfaces (ethtool -K IF tso off
gso off gro off, without needing ethtool): start.sh runs it on bmv2's ports before bmv2 opens them.

Why: bmv2 captures each port with libpcap in immediate mode, i.e. a TPACKET_V2 ring of libpcap's
default 2 MB. libpcap sizes each slot of that ring for the largest frame the interface can hand
it: MTU + 18 bytes, but 65535 + 18 when any offload is on (a veth has TSO and GSO on by default),
so the ring holds 32 frames; a burst of 33 frames while bmv2's capture thread is busy loses one.
With the offloads off the slots are MTU-sized: 218 frames at MTU 9500, about 1300 at MTU 1500
(docs/experiments.md, "Where a frame is lost"). Only bmv2 sends on these interfaces, one frame at
a time, so nothing needs the offloads.

    python3 bmv2_env/offload_off.py veth0 veth2 ...
"""

from __future__ import annotations

import array
import fcntl
import socket
import struct
import sys

SIOCETHTOOL = 0x8946
# Legacy ethtool commands (linux/ethtool.h): get / set one feature, struct ethtool_value.
FEATURES = {
    "tso": (0x0000001E, 0x0000001F),
    "gso": (0x00000023, 0x00000024),
    "gro": (0x0000002B, 0x0000002C),
}
IFREQ_SIZE = 40


def _ethtool(sock: socket.socket, ifname: str, cmd: int, data: int = 0) -> int:
    value = array.array("I", [cmd, data])
    addr, _n = value.buffer_info()
    ifreq = struct.pack("16sP", ifname.encode(), addr).ljust(IFREQ_SIZE, b"\0")
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq)
    return int(value[1])


def offload_off(ifname: str) -> list[str]:
    """Turn the offloads off; returns those still on (the driver refused)."""
    still = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name, (get, set_) in FEATURES.items():
            if _ethtool(s, ifname, get):
                _ethtool(s, ifname, set_, 0)
            if _ethtool(s, ifname, get):
                still.append(name)
    return still


def main(argv: list[str]) -> int:
    bad = 0
    for ifname in argv:
        try:
            still = offload_off(ifname)
        except OSError as e:
            print(f"offload_off.py: {ifname}: {e}", file=sys.stderr)
            bad += 1
            continue
        if still:
            print(f"offload_off.py: {ifname}: still on: {', '.join(still)}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
