"""Bit instructions numba does not expose, as LLVM intrinsics for the kernel's njit code."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def bit_length(typingctx, x):  # type: ignore[no-untyped-def]
    """64 minus the leading zeros of x (0 for 0; x >= 0): llvm.ctlz, one instruction (lzcnt)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        lz = builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))
        return builder.sub(ir.Constant(ir.IntType(64), 64), lz)

    return sig, codegen


@intrinsic
def lowest_bit(typingctx, x):  # type: ignore[no-untyped-def]
    """The index of x's lowest set bit (x != 0): llvm.cttz, one instruction (tzcnt)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return sig, codegen
