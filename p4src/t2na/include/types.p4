// Tofino-only metadata of the library (symphony_lib.p4): the intermediate values the stateful
// ALUs and gateways need, which v1model computes inline, and the bridged header that carries
// what the egress needs to finish SPEC 4.5 and 6 (Symphony's decision and the job for its
// queue-mark counter) across the traffic manager.
#ifndef SYMPHONY_T2NA_TYPES_P4
#define SYMPHONY_T2NA_TYPES_P4

header symphony_bridge_h {
    bit<1>   tracked;
    bit<1>   symphony_mark;
    bit<6>   _pad;
    job_id_t job_id;
    bit<16>  sym_gate;      // the job's backlog gate (JobParams.gate_depth), for EcnMark
}

struct symphony_tofino_meta_t {
    bit<1>  rollover;
    bit<16> flow_slot;
    bit<32> flow_key;       // sig:16 ++ step:16
    bit<32> psn_plus;       // psn + 2^24 (bit 24 marks a stored base as valid)
    bit<32> flow_rv;        // the stored base (psn + 2^24) on a match, 0 on a mismatch
    step_t  step_delta;     // step - old step_min (serial order from its top bit)
    int<32> tau_up;         // 256 - tau_q8: eq. 5's running sum for an outpacing packet
    int<32> tau_down;       // -tau_q8: for any other packet
    bit<32> old_score;      // the closed window's score (two's complement)
    bit<1>  enough;         // the closed window held at least N_sample packets
    bit<1>  first;          // the window's first packet (window_packets 0, or it just closed)
    bit<8>  alpha_stored;   // the alpha register's value: alpha - 1
    bit<8>  alpha_max_m1;
    psn_t   warm_floor;     // max(psn_rec, N_warmup): equal to N_warmup iff psn_rec <= N_warmup
    log_t   partial;        // the partial sum of d (throttle.p4)
    bit<32> coin;
    bit<32> coin_diff;      // threshold - coin: positive iff coin < threshold
}

// Everything SymphonyTracker reads and writes; the program's ingress parser zeroes it
// (`= { ... }`), as v1model does for all metadata.
struct symphony_ingress_t {
    symphony_meta_t        s;
    symphony_tofino_meta_t t;
}

// Everything SymphonyMarker reads and writes besides the bridged header; zeroed by the egress
// parser. ecn_changed tells the egress deparser to recompute the IPv4 checksum.
struct symphony_egress_t {
    bit<32> threshold;
    bit<32> coin;
    bit<32> coin_diff;      // threshold - coin: positive iff coin < threshold
    bool    queue_mark;
    bool    ecn_changed;
    bit<16> depth16;        // enq_qdepth, low 16 bits (a gate is below 2^16 on Tofino2)
    bit<16> short_by;       // sym_gate |-| depth: 0 iff the queue is at least the gate
}

#endif
