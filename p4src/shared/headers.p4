// Architecture-neutral headers and Symphony's metadata.
#ifndef SYMPHONY_HEADERS_P4
#define SYMPHONY_HEADERS_P4

#include "defines.p4"

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;          // reserved, DF, MF
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_h {
    bit<16> src_port;       // Symphony: the step index
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

// InfiniBand Base Transport Header (IBTA vol. 1, 9.2), as carried by RoCEv2.
header bth_h {
    bit<8>  opcode;
    bit<1>  se;
    bit<1>  migreq;
    bit<2>  pad_cnt;
    bit<4>  tver;
    bit<16> pkey;
    bit<1>  fecn;
    bit<1>  becn;
    bit<6>  resv6;          // Symphony: high 6 bits of the job tag
    bit<24> dqpn;
    bit<1>  ackreq;
    bit<7>  resv7;          // Symphony: low 7 bits of the job tag
    bit<24> psn;
}

// RDMA Extended Transport Header, on RDMA WRITE FIRST and ONLY packets.
header reth_h {
    bit<64> va;
    bit<32> rkey;
    bit<32> dma_len;
}

struct headers_t {
    ethernet_h ethernet;
    ipv4_h     ipv4;
    udp_h      udp;
    bth_h      bth;
    reth_h     reth;
}

// Symphony's per-packet working state, filled in by the ingress controls in SPEC order.
struct symphony_meta_t {
    bool     tracked;       // classified to an installed job
    job_id_t job_id;
    bool     is_first;      // step-starting opcode (FIRST/ONLY)
    bool     is_last;       // step-completing opcode (LAST/ONLY)
    bit<13>  tag;           // resv6 ++ resv7, joined by the parser (roce_parser.p4)
    step_t   step;
    // Parameters of the job (classify.job_params).
    bit<1>   mark_enable;
    log_t    k_log;
    bit<16>  tau_q8;
    bit<32>  t_win;
    psn_t    n_warmup;
    bit<32>  n_sample;
    bit<8>   alpha_max;
    bit<1>   psn_absolute;
#if defined(__TARGET_TOFINO__)
    // Tofino: the window clock (1.024 us ticks) and T_win - now, which set_params computes on
    // the way so that the window's stateful ALU runs in the stage right after the parameters.
    bit<32>  now;
    bit<32>  win_offset;
#endif
    // Progress inside the step (psn.p4): p, or unknown. v1model has no p_known: there p = 0
    // stands for "unknown" too, since every test of p_known also asks p != 0 or takes max(p, .).
#if defined(__TARGET_TOFINO__)
    bool     p_known;
#endif
    psn_t    p;
    // The job's state after this packet (job_state.p4).
    step_t   step_min;
    psn_t    psn_rec;
    bit<8>   alpha;
    // Probability arithmetic (throttle.p4).
    bool     lut_miss;
    bit<16>  d;
    bit<32>  threshold;
    // Backlog gate (JobParams.gate_depth): the Symphony mark leaves only from an egress queue
    // at least this deep at enqueue (EcnMark); 0 lets every mark leave, the paper's policy.
    qdepth_t sym_gate;
    // Outputs.
    bool     symphony_mark;
    bool     queue_mark;
#if !defined(__TARGET_TOFINO__)
    // v1model: job_state.p4 finds out whether the packet is outpacing (its step later than
    // step_min after the update, SPEC 4.4) while it compares the steps anyway, the log lookups
    // add up d as they go (throttle.p4), and psn.p4 subtracts a base that is 0 unless set.
    bool     outpacing;
    bit<32>  log_sum;
    psn_t    psn_base;      // p = psn - psn_base (psn.p4); 0 in "absolute" mode
#endif
}

#endif
