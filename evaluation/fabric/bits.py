"""Bit instructions numba does not expose, as LLVM intrinsics for the kernel's njit code."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
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


@intrinsic
def prefetch(typingctx, ary, i):  # type: ignore[no-untyped-def]
    """A hint to load ary[i]'s cache line (llvm.prefetch: read, keep in every level); i must be
    within ary. Nothing else happens."""
    sig = types.void(ary, i)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        a = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(a.data, [args[1]])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen
