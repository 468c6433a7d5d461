// Protocol constants and Symphony's fixed-point formats (mirrored in model/arithmetic.py).
#ifndef SYMPHONY_DEFINES_P4
#define SYMPHONY_DEFINES_P4

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_UDP = 17;
const bit<16> UDP_PORT_ROCEV2 = 4791;

// ECN codepoints (RFC 3168).
const bit<2> ECN_ECT1 = 0b01;
const bit<2> ECN_ECT0 = 0b10;
const bit<2> ECN_CE = 0b11;

// BTH opcodes that carry a RETH: RDMA WRITE FIRST / ONLY / ONLY with immediate, RC and UC.
const bit<8> RC_RDMA_WRITE_FIRST = 0x06;
const bit<8> RC_RDMA_WRITE_ONLY = 0x0A;
const bit<8> RC_RDMA_WRITE_ONLY_IMM = 0x0B;
const bit<8> UC_RDMA_WRITE_FIRST = 0x26;
const bit<8> UC_RDMA_WRITE_ONLY = 0x2A;
const bit<8> UC_RDMA_WRITE_ONLY_IMM = 0x2B;

// The coin: a uniform 24-bit number, marked iff coin < threshold; threshold 2^24 = always.
#define COIN_MAX 0xFFFFFF
const bit<32> COIN_ALWAYS = 0x1000000;

typedef bit<16> job_id_t;
typedef bit<16> step_t;
typedef bit<24> psn_t;
typedef bit<16> log_t;   // log2 in fixed point, 8 fractional bits
typedef bit<19> qdepth_t; // egress queue depth, in the target's unit (bmv2: packets); both archs carry 19 bits

#endif
