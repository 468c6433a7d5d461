"""BTH opcodes and their classes (SPEC 1): the one Python declaration.

IBTA vol. 1, table 38: the top 3 bits are the transport (RC 0x00, UC 0x20, ...), the low 5 bits
the operation. Symphony tracks SEND and RDMA WRITE data packets of RC and UC; the P4 program
repeats these classes in its const `opcode_class` table (p4src/shared), which the PTF suite
checks against the model packet by packet.
"""

from __future__ import annotations

UC = 0x20  # a UC opcode is the RC one plus this
_TRANSPORT_SHIFT = 5
_OP_MASK = 0x1F

# RC operations (low 5 bits).
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM, SEND_ONLY, SEND_ONLY_IMM = range(6)
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_LAST_IMM, WRITE_ONLY, WRITE_ONLY_IMM = range(6, 12)
READ_REQUEST = 0x0C
ACK = 0x11  # RC ACKNOWLEDGE: ACK or NAK (the AETH's syndrome tells them apart)
ATOMIC_ACK = 0x12  # RC ATOMIC ACKNOWLEDGE
CNP = 0x81  # RoCEv2 Congestion Notification Packet

# The ACK class (docs/ack_priority.md): frames that carry no data but hold a sender up while they
# wait behind data. ACKNOWLEDGE releases the sender's window (and a NAK asks for a retransmit),
# ATOMIC ACKNOWLEDGE completes an atomic operation (a small response like an ACK, unlike a READ
# response, which is bulk data and stays with data), a CNP is what DCQCN cuts its rate on. A
# switch whose config says `ack_priority = true` sends these to a priority egress queue; the
# controller writes one `ack_class` entry per opcode. None is step traffic (SPEC 1), so Symphony's
# state and marks are the same with the class on or off.
ACK_CLASS = frozenset({ACK, ATOMIC_ACK, CNP})

# Step-completing ("LAST") and step-starting ("FIRST") operations.
LAST_OPS = frozenset(
    {SEND_LAST, SEND_LAST_IMM, SEND_ONLY, SEND_ONLY_IMM}
    | {WRITE_LAST, WRITE_LAST_IMM, WRITE_ONLY, WRITE_ONLY_IMM}
)
FIRST_OPS = frozenset(
    {SEND_FIRST, SEND_ONLY, SEND_ONLY_IMM} | {WRITE_FIRST, WRITE_ONLY, WRITE_ONLY_IMM}
)
# Opcodes followed by a RETH: RDMA WRITE FIRST / ONLY / ONLY with immediate, RC and UC.
RETH_OPCODES = frozenset(
    t + op for t in (0, UC) for op in (WRITE_FIRST, WRITE_ONLY, WRITE_ONLY_IMM)
)


def is_tracked_opcode(opcode: int) -> bool:
    """SEND and RDMA WRITE data packets of RC (0x00-0x0B) and UC (0x20-0x2B)."""
    return opcode >> _TRANSPORT_SHIFT in (0, 1) and (opcode & _OP_MASK) <= WRITE_ONLY_IMM


def is_last(opcode: int) -> bool:
    return is_tracked_opcode(opcode) and opcode & _OP_MASK in LAST_OPS


def is_first(opcode: int) -> bool:
    return is_tracked_opcode(opcode) and opcode & _OP_MASK in FIRST_OPS
