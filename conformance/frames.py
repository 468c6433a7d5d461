"""What one switch does with any Ethernet frame, not only well-formed RoCEv2 (SPEC 1, 4.5, 6).

`switch_model.SwitchModel` models Symphony's per-packet algorithm on a parsed packet. This module is
the layer around it that the bmv2 program has too: its parser (which headers a frame yields, and
where it stops with a parser error), its plain forwarding (IPv4 longest prefix onto a port or an
ECMP group, else the ingress port's cross-connect, else drop) and its ECN rewrite with the
incremental IPv4 checksum patch.
The packet fuzzer (ptf_tests/test_fuzz.py) sends arbitrary frames through bmv2 and through
`FrameModel.handle` and compares output frames and state.

Parser semantics, as p4src/v1model/include/parser.p4 has them (docs/robustness.md):
- Ethernet, then IPv4 only for EtherType 0x0800 (a VLAN tag or IPv6 ends parsing: not IPv4);
- UDP only for IPv4 version 4 with IHL 5 (no options), MF clear, fragment offset 0, protocol 17;
- the BTH only for UDP destination port 4791; the RETH only after the opcodes that carry one;
- a frame too short for the header the parser extracts next ends in a parser error: the headers
  before it stay valid (forwarding uses them), nothing is classified;
- lengths (IPv4 total length, UDP length) and checksums are not checked: like a hardware parser,
  the program believes the headers it reads.
Only a BTH with transport version 0 is classified (SPEC 1's opcodes are those of version 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from symphony.model.ecmp import next_hop
from symphony.model.opcodes import RETH_OPCODES
from symphony.model.switch_model import Decision, RocePacket, SwitchModel

ETH_LEN = 14
IPV4_LEN = 20
UDP_LEN = 8
BTH_LEN = 12
RETH_LEN = 16
ETHERTYPE_IPV4 = 0x0800
IP_PROTO_UDP = 17
UDP_PORT_ROCEV2 = 4791
ECN_CE = 0b11


@dataclass(frozen=True)
class Parsed:
    """The parser's outcome for one frame."""

    ipv4: int | None = None  # offset of the IPv4 header when it was extracted
    udp: int | None = None  # offset of the UDP header when it was extracted
    roce: RocePacket | None = None  # set when the parser reached the end of BTH (and RETH)
    tver: int = 0  # the BTH transport version, when there is a BTH
    error: bool = False  # a header the parser wanted did not fit in the frame

    def dst_addr(self, frame: bytes) -> int:
        assert self.ipv4 is not None
        return int.from_bytes(frame[self.ipv4 + 16 : self.ipv4 + 20], "big")

    def five_tuple(self, frame: bytes) -> tuple[int, int, int, int, int]:
        """What the ECMP hash reads (model/ecmp.py): the UDP ports are 0 without a UDP header."""
        assert self.ipv4 is not None
        ip = self.ipv4
        src = int.from_bytes(frame[ip + 12 : ip + 16], "big")
        sport = dport = 0
        if self.udp is not None:
            sport = int.from_bytes(frame[self.udp : self.udp + 2], "big")
            dport = int.from_bytes(frame[self.udp + 2 : self.udp + 4], "big")
        return src, self.dst_addr(frame), frame[ip + 9], sport, dport


def parse(frame: bytes) -> Parsed:
    """p4src/v1model/include/parser.p4, byte for byte."""
    if len(frame) < ETH_LEN:
        return Parsed(error=True)
    if int.from_bytes(frame[12:14], "big") != ETHERTYPE_IPV4:
        return Parsed()
    ip = ETH_LEN
    if len(frame) < ip + IPV4_LEN:
        return Parsed(error=True)
    version, ihl = frame[ip] >> 4, frame[ip] & 0xF
    more_fragments = (frame[ip + 6] >> 5) & 1
    frag_offset = int.from_bytes(frame[ip + 6 : ip + 8], "big") & 0x1FFF
    protocol = frame[ip + 9]
    if (version, ihl, more_fragments, frag_offset, protocol) != (4, 5, 0, 0, IP_PROTO_UDP):
        return Parsed(ipv4=ip)
    udp = ip + IPV4_LEN
    if len(frame) < udp + UDP_LEN:
        return Parsed(ipv4=ip, error=True)
    if int.from_bytes(frame[udp + 2 : udp + 4], "big") != UDP_PORT_ROCEV2:
        return Parsed(ipv4=ip, udp=udp)
    bth = udp + UDP_LEN
    if len(frame) < bth + BTH_LEN:
        return Parsed(ipv4=ip, udp=udp, error=True)
    opcode = frame[bth]
    tver = frame[bth + 1] & 0xF
    if opcode in RETH_OPCODES and len(frame) < bth + BTH_LEN + RETH_LEN:
        return Parsed(ipv4=ip, udp=udp, tver=tver, error=True)
    roce = RocePacket(
        src=int.from_bytes(frame[ip + 12 : ip + 16], "big"),
        step=int.from_bytes(frame[udp : udp + 2], "big"),
        opcode=opcode,
        psn=int.from_bytes(frame[bth + 9 : bth + 12], "big"),
        dqpn=int.from_bytes(frame[bth + 5 : bth + 8], "big"),
        tag=((frame[bth + 4] & 0x3F) << 7) | (frame[bth + 8] & 0x7F),
        ecn=frame[ip + 1] & 0b11,
    )
    return Parsed(ipv4=ip, udp=udp, roce=roce, tver=tver)


def ones_complement_patch(checksum: int, old_word: int, new_word: int) -> int:
    """RFC 1624 eq. 3, HC' = ~(~HC + ~m + m'), folded as ecn_mark.p4 folds it."""
    total = (~checksum & 0xFFFF) + (~old_word & 0xFFFF) + new_word
    total = (total & 0xFFFF) + (total >> 16)
    total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def with_ce(frame: bytes, ip: int) -> bytes:
    """The frame with the IPv4 ECN field set to CE and its checksum patched (ecn_mark.p4)."""
    old_word = int.from_bytes(frame[ip : ip + 2], "big")
    new_word = old_word | ECN_CE
    checksum = int.from_bytes(frame[ip + 10 : ip + 12], "big")
    patched = ones_complement_patch(checksum, old_word, new_word)
    out = bytearray(frame)
    out[ip + 1] |= ECN_CE
    out[ip + 10 : ip + 12] = patched.to_bytes(2, "big")
    return bytes(out)


@dataclass(frozen=True)
class Outcome:
    """Where a frame goes and what may leave: `unmarked` always, `marked` (CE) when the model's
    decision is a mark, or either when the switch's coin decides (`decision.mark is None`)."""

    port: int | None  # None: dropped by the forwarding rules
    decision: Decision
    unmarked: bytes
    marked: bytes | None  # None: not ECN-capable IPv4, a mark cannot change it

    def allowed(self) -> tuple[bytes, ...]:
        if self.marked is None or self.decision.mark is False:
            return (self.unmarked,)
        if self.decision.mark:
            return (self.marked,)
        return (self.unmarked, self.marked)


@dataclass
class FrameModel:
    """One bmv2 switch: forwarding rules around a Symphony `SwitchModel` (no queue marking)."""

    model: SwitchModel = field(default_factory=SwitchModel)
    routes: list[tuple[int, int, int]] = field(default_factory=list)  # (prefix, length, port)
    port_map: dict[int, int] = field(default_factory=dict)  # ingress port -> egress port
    # Routes onto ECMP groups (prefix, length, group) and each group's member ports.
    ecmp_routes: list[tuple[int, int, int]] = field(default_factory=list)
    groups: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def egress(self, frame: bytes, parsed: Parsed, in_port: int) -> int | None:
        """forward.p4: IPv4 by longest prefix onto a port or an ECMP group's member (miss, or a
        group without members: drop), anything else by ingress port."""
        if parsed.ipv4 is None:
            return self.port_map.get(in_port)
        dst = parsed.dst_addr(frame)
        best: tuple[int, int | None, int | None] | None = None  # (length, port, group)
        targets = [(p, n, port, None) for p, n, port in self.routes]
        targets += [(p, n, None, group) for p, n, group in self.ecmp_routes]
        for prefix, length, port, group in targets:
            mask = ((1 << length) - 1) << (32 - length) if length else 0
            if dst & mask == prefix & mask and (best is None or length > best[0]):
                best = (length, port, group)
        if best is None:
            return None
        _, port, group = best
        if group is None:
            return port
        members = self.groups.get(group)
        return next_hop(members, *parsed.five_tuple(frame)) if members else None

    def handle(self, frame: bytes, in_port: int, now: int, coin: int | None = None) -> Outcome:
        """The frame through the switch: forwarding, then (forwarded, parsed without error, a
        version-0 BTH) Symphony's classification and state update, then the ECN rewrite."""
        parsed = parse(frame)
        port = self.egress(frame, parsed, in_port)
        decision = Decision(job_id=None)
        if port is not None and not parsed.error and parsed.roce is not None and parsed.tver == 0:
            decision = self.model.process(parsed.roce, now, coin)
        marked = None
        if parsed.ipv4 is not None and frame[parsed.ipv4 + 1] & 0b11 in (0b01, 0b10):
            marked = with_ce(frame, parsed.ipv4)
        return Outcome(port, decision, frame, marked)
