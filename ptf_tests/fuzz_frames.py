"""Seeded packet fuzzing input: valid RoCEv2 traffic of several jobs mixed with structured
mutations of it (docs/robustness.md).

A plan is the jobs to install and a list of frames, each with its ingress port and the name of
the mutation that made it ("valid" for the unmutated ones). Mutations: every header field set to
a boundary, random or bit-flipped value; truncation at every byte boundary (a full sweep of two
template frames in every plan, plus random cuts); IPv4 version, IHL with and without real
options, fragments (MF, offset); BTH transport version; one or two VLAN tags; IPv6, ARP and
random EtherTypes carrying the same bytes; other UDP ports and IP protocols; trailing bytes.
Everything about a plan follows from its seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether
from sequences import CLOSE_WINDOW, JobPlan
from sequences import generate as valid_sequence

from conformance import packets as rp

# Header fields of Ethernet / IPv4 / UDP / BTH / RETH: (name, bit offset in the frame, width).
_ETH, _IP, _UDP, _BTH, _RETH = 0, 14 * 8, 34 * 8, 42 * 8, 54 * 8
FIELDS: list[tuple[str, int, int]] = [
    ("eth.dst", _ETH, 48),
    ("eth.src", _ETH + 48, 48),
    ("eth.type", _ETH + 96, 16),
    ("ip.version", _IP, 4),
    ("ip.ihl", _IP + 4, 4),
    ("ip.dscp", _IP + 8, 6),
    ("ip.ecn", _IP + 14, 2),
    ("ip.len", _IP + 16, 16),
    ("ip.id", _IP + 32, 16),
    ("ip.flags", _IP + 48, 3),
    ("ip.frag", _IP + 51, 13),
    ("ip.ttl", _IP + 64, 8),
    ("ip.proto", _IP + 72, 8),
    ("ip.chksum", _IP + 80, 16),
    ("ip.src", _IP + 96, 32),
    ("ip.dst", _IP + 128, 32),
    ("udp.sport", _UDP, 16),
    ("udp.dport", _UDP + 16, 16),
    ("udp.len", _UDP + 32, 16),
    ("udp.chksum", _UDP + 48, 16),
    ("bth.opcode", _BTH, 8),
    ("bth.se", _BTH + 8, 1),
    ("bth.migreq", _BTH + 9, 1),
    ("bth.pad", _BTH + 10, 2),
    ("bth.tver", _BTH + 12, 4),
    ("bth.pkey", _BTH + 16, 16),
    ("bth.fecn", _BTH + 32, 1),
    ("bth.becn", _BTH + 33, 1),
    ("bth.resv6", _BTH + 34, 6),
    ("bth.dqpn", _BTH + 40, 24),
    ("bth.ackreq", _BTH + 64, 1),
    ("bth.resv7", _BTH + 65, 7),
    ("bth.psn", _BTH + 72, 24),
    ("reth.va", _RETH, 64),
    ("reth.rkey", _RETH + 64, 32),
    ("reth.len", _RETH + 96, 32),
]
PORTS = 4
JOBS = 4  # jobs of valid traffic per plan, tag and hosts mode
# A window that closes at every packet (T_win = 0, as base_test.T_WIN_ALWAYS_US).
T_WIN_ALWAYS_US = 0.0


def get_bits(frame: bytes, offset: int, width: int) -> int:
    whole = int.from_bytes(frame, "big")
    return (whole >> (len(frame) * 8 - offset - width)) & ((1 << width) - 1)


def set_bits(frame: bytes, offset: int, width: int, value: int) -> bytes:
    total = len(frame) * 8
    shift = total - offset - width
    whole = int.from_bytes(frame, "big")
    whole &= ~(((1 << width) - 1) << shift)
    whole |= (value & ((1 << width) - 1)) << shift
    return whole.to_bytes(len(frame), "big")


def _field_value(rng: random.Random, old: int, width: int) -> int:
    top = (1 << width) - 1
    choice = rng.randrange(6)
    if choice == 0:
        return 0
    if choice == 1:
        return top
    if choice == 2:
        return (old + rng.choice((-1, 1))) & top
    if choice == 3:
        return old ^ (1 << rng.randrange(width))
    return rng.randrange(top + 1)


def _mutate_field(rng: random.Random, frame: bytes) -> tuple[str, bytes]:
    fitting = [f for f in FIELDS if f[1] + f[2] <= len(frame) * 8]
    name, offset, width = rng.choice(fitting)
    old = get_bits(frame, offset, width)
    return f"field:{name}", set_bits(frame, offset, width, _field_value(rng, old, width))


def _ip_options(rng: random.Random, frame: bytes) -> tuple[str, bytes]:
    """Real options (IHL and total length follow them) or an IHL that lies about them."""
    words = rng.randint(1, 10)
    if rng.random() < 0.5:
        opts = bytes([1] * (words * 4 - 1) + [0])  # NOPs, then End of Options
        body = frame[14:34] + opts + frame[34:]
        hdr = bytearray(body)
        hdr[0] = 0x40 | (5 + words)
        hdr[2:4] = (int.from_bytes(hdr[2:4], "big") + len(opts)).to_bytes(2, "big")
        return "ip-options", frame[:14] + bytes(hdr)
    return "ip-ihl", set_bits(frame, _IP + 4, 4, rng.choice([0, 1, 4, 6, 15]))


def _vlan(rng: random.Random, frame: bytes) -> tuple[str, bytes]:
    tags = b""
    for _ in range(rng.randint(1, 2)):
        tpid = rng.choice([0x8100, 0x88A8, 0x9100])
        tags += tpid.to_bytes(2, "big") + rng.randrange(1 << 16).to_bytes(2, "big")
    return "vlan", frame[:12] + tags + frame[12:]


def _not_ipv4(rng: random.Random, frame: bytes) -> tuple[str, bytes]:
    eth = Ether(frame[:14])
    kind = rng.randrange(3)
    if kind == 0:  # the same UDP/BTH over IPv6
        udp_and_up = frame[34:]
        pkt = Ether(src=eth.src, dst=eth.dst) / IPv6(src="2001:db8::1", dst="2001:db8::2", nh=17)
        return "ipv6", bytes(pkt) + udp_and_up
    if kind == 1:
        pkt = Ether(src=eth.src, dst=eth.dst) / ARP(psrc="10.0.0.1", pdst="10.0.1.1")
        return "arp", bytes(pkt)
    ethertype = rng.choice([0x86DD, 0x0806, 0x8847, 0x88CC, 0x0801, 0x07FF, rng.randrange(1 << 16)])
    return "ethertype", set_bits(frame, 96, 16, ethertype)


def _fragment(rng: random.Random, frame: bytes) -> tuple[str, bytes]:
    out = frame
    if rng.random() < 0.6:
        out = set_bits(out, _IP + 50, 1, 1)  # MF
    if out == frame or rng.random() < 0.5:
        out = set_bits(out, _IP + 51, 13, rng.choice([1, 8, 185, 0x1FFF]))
    return "fragment", out


def _transport(rng: random.Random, frame: bytes) -> tuple[str, bytes]:
    if rng.random() < 0.5:
        return "udp-port", set_bits(frame, _UDP + 16, 16, rng.choice([4790, 4792, 0, 0xFFFF]))
    return "ip-proto", set_bits(frame, _IP + 72, 8, rng.choice([6, 1, 47, 0, 255, 16, 18]))


def _truncate(rng: random.Random, frame: bytes) -> tuple[str, bytes]:
    # Below 14 bytes a frame cannot cross a veth unchanged (the kernel pads it to the Ethernet
    # header), so cuts start there.
    return "truncate", frame[: rng.randrange(14, len(frame))]


def _trailer(rng: random.Random, frame: bytes) -> tuple[str, bytes]:
    return "trailer", frame + rng.randbytes(rng.randint(1, 40))


MUTATIONS = [
    (_mutate_field, 10),
    (_truncate, 3),
    (lambda r, f: ("ip-version", set_bits(f, _IP, 4, r.choice([0, 5, 6, 15]))), 1),
    (lambda r, f: ("bth-tver", set_bits(f, _BTH + 12, 4, r.randint(1, 15))), 1),
    (_fragment, 1),
    (_ip_options, 1),
    (_vlan, 1),
    (_not_ipv4, 1),
    (_transport, 1),
    (_trailer, 1),
]


@dataclass
class FuzzPlan:
    seed: int
    jobs: list[JobPlan] = field(default_factory=list)
    frames: list[tuple[int, str, bytes]] = field(default_factory=list)  # (in_port, kind, bytes)


def _sweep(template: bytes, in_port: int) -> list[tuple[int, str, bytes]]:
    """Every truncation of `template` from the Ethernet header to its last header byte + 2."""
    return [(in_port, "truncate-sweep", template[:n]) for n in range(14, min(len(template), 72))]


def generate(seed: int, packets: int, valid_share: float = 0.5) -> FuzzPlan:
    """`packets` frames: about `valid_share` of them the valid multi-job traffic of
    sequences.generate, the rest mutations of it, plus two full truncation sweeps."""
    rng = random.Random(seed)
    # The valid traffic: several jobs (tag and hosts mode), messages, duplicates, reordering,
    # lost FIRSTs. Windows are steady per job (never, or at every packet): no clock dependence.
    seq = valid_sequence(seed, packets=int(packets * valid_share) + 1, jobs=JOBS)
    plan = FuzzPlan(seed)
    for job in seq.jobs:
        # sequences.generate's jobs have a window that never closes in a test; keep it or make
        # it close at every packet.
        t_win = rng.choice([job.params.t_win_us, T_WIN_ALWAYS_US])
        plan.jobs.append(replace(job, params=replace(job.params, t_win_us=t_win)))
    valid = [bytes(p) for p in seq.items if not (isinstance(p, tuple) and p[0] == CLOSE_WINDOW)]
    weights = [w for _, w in MUTATIONS]
    for opcode in (rp.WRITE_FIRST, rp.SEND_MIDDLE):
        job = plan.jobs[0]
        template = rp.rocev2(opcode=opcode, tag=job.job_id if job.tag else 0, psn=7, step=3)
        plan.frames += _sweep(bytes(template), rng.randrange(PORTS))
    queue = list(valid)
    in_port = 0
    while len(plan.frames) < packets:
        # Bursts from one ingress port: bmv2 keeps the order of frames from one port only.
        if rng.random() < 1 / 16:
            in_port = rng.randrange(PORTS)
        if queue and rng.random() < valid_share:
            plan.frames.append((in_port, "valid", queue.pop(0)))
            continue
        base = rng.choice(valid)
        mutate = rng.choices([m for m, _ in MUTATIONS], weights)[0]
        kind, frame = mutate(rng, base)
        plan.frames.append((in_port, kind, frame))
    return plan


def udp_ip(frame: bytes) -> bool:
    """True for an Ethernet/IPv4/UDP frame scapy can show (for failure messages)."""
    pkt = Ether(frame)
    return IP in pkt and UDP in pkt
