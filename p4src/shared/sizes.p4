// Table and register sizes: the one place to change them. Both targets include this file.
#ifndef SYMPHONY_SIZES_P4
#define SYMPHONY_SIZES_P4

// Per-job register slots (index = Job_ID, 0 = untracked). Tag mode names 1..8191 (13-bit tag);
// hosts mode can use every ID below MAX_JOBS.
#ifndef MAX_JOBS
#define MAX_JOBS 16384
#endif
// Hashed per-flow PSN base slots (flow = IPv4 source + BTH destination QP). On Tofino2 one
// stateful ALU's register must fit one stage: 32768 64-bit slots take 17 SRAMs and 17 map RAMs,
// 65536 would take 33 of each, more than a stage's switchbox can reach (docs/tofino.md).
#ifndef FLOW_SLOTS
#if defined(__TARGET_TOFINO__)
#define FLOW_SLOTS 32768
#else
#define FLOW_SLOTS 65536
#endif
#endif
// IPv4 source -> Job_ID entries for hosts that cannot tag.
#ifndef HOST_TABLE_SIZE
#define HOST_TABLE_SIZE 16384
#endif
// Tag -> Job_ID entries: the tag has 13 bits.
#define TAG_TABLE_SIZE 8192
#define ROUTE_TABLE_SIZE 1024
#define PORT_TABLE_SIZE 512
// ECMP (forward.p4, docs/design.md "ECMP"): a group has 2^ECMP_BUCKET_BITS buckets, the low bits
// of the 5-tuple's CRC-32; the member table holds every group's buckets (256 groups of 16).
// controller/symphony/sizes.py repeats both; tests/test_p4info_names.py checks them.
#define ECMP_BUCKET_BITS 4
#define ECMP_BUCKETS (1 << ECMP_BUCKET_BITS)
#define ECMP_MEMBER_TABLE_SIZE 4096
// log2 LPM tables: 2^7 - 1 exact entries + 17 exponents x 2^6 mantissas = 1215 (model/tables.py).
#define LOG_TABLE_SIZE 1280
#define ALPHA_TABLE_SIZE 256
// Probability table domain: d in [0, 16 * 256).
#define PROB_TABLE_SIZE 4096
#define QUEUE_TABLE_SIZE 8192
// The ACK class (include/ack_priority.p4): one entry per BTH opcode the controller sends to the
// priority queue (model/opcodes.py ACK_CLASS: three today), room for a few more.
#define ACK_CLASS_TABLE_SIZE 16
// Per-port frame counters (include/port_counters.p4): one cell per 9-bit port number.
#define PORT_SLOTS 512

#endif
