// Symphony as a library for t2na programs: two controls a forwarding program applies, the way
// fabric-tna composes its controls. Our own top (../symphony.p4) is one such program and
// ../fabric_demo.p4 another, beside L2, routing with ECMP and an ACL.
//
// Interface (docs/library.md):
//   headers read    ipv4_h, udp_h, bth_h (../../shared/headers.p4); their valid bits decide
//                   what is Symphony traffic, so the program's parser extracts UDP and, after
//                   UDP destination port 4791, the BTH (only option-less, unfragmented IPv4).
//   ingress         SymphonyTracker(ipv4, udp, bth, sym, bridge, global_tstamp, parser_err,
//                   drop_ctl), after the forwarding decision: a packet with a parser error or
//                   one the program drops stays untracked (SPEC 1). It writes `sym` (a
//                   symphony_ingress_t the ingress parser zeroes) and the bridged header.
//   bridged         symphony_bridge_h (5 bytes): the program emits it in front of the packet
//                   in its ingress deparser and extracts it in its egress parser.
//   egress          SymphonyMarker(ipv4, bridge, sym, eg_intr_md): the queue ramp and CE. When
//                   sym.ecn_changed is set the egress deparser recomputes the IPv4 checksum.
// P4Runtime names: the tables, registers and counters inside keep absolute names
// (SymphonyIngress.* and SymphonyEgress.*) wherever the program instantiates the controls, so
// the controller drives every program that embeds Symphony the same way.
#ifndef SYMPHONY_T2NA_LIB_P4
#define SYMPHONY_T2NA_LIB_P4

#include "../../shared/sizes.p4"
#include "../../shared/headers.p4"
#include "types.p4"
#include "../../shared/roce_parser.p4"
#include "../../shared/classify.p4"
#include "psn.p4"
#include "job_state.p4"
#include "throttle.p4"
#include "queue_mark.p4"
#include "ecn_mark.p4"

control SymphonyTracker(in ipv4_h ipv4, in udp_h udp, in bth_h bth,
                        inout symphony_ingress_t sym,
                        inout symphony_bridge_h bridge,
                        in bit<48> global_tstamp,
                        in bit<16> parser_err,
                        in bit<3> drop_ctl) {
    @name(".SymphonyIngress.classify") Classify() classify;
    @name(".SymphonyIngress.psn") PsnTracker() psn;
    @name(".SymphonyIngress.job_state") JobState() job_state;
    @name(".SymphonyIngress.throttle") Throttle() throttle;
    FlowHash() flow_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) clock;

    apply {
        bridge.setValid();
        bridge.tracked = 0;
        bridge.symphony_mark = 0;
        bridge._pad = 0;
        bridge.sym_gate = 0;
        // Windows run on a 1.024 us clock: bits 41..10 of the ns timestamp. An identity hash
        // picks them out of the crossbar already aligned (a shift would span two containers).
        sym.s.now = clock.get({ global_tstamp[41:10] });
        // Everything that needs only the headers starts in the first stages: the flow hashes,
        // the opcode class and the job lookups, then the parameters.
        flow_hash.apply(ipv4, udp, bth, sym.t);
        if (parser_err == 0 && bth.isValid()) {
            classify.apply(ipv4, udp, bth, sym.s);
        }
        // The state is touched only for a tracked packet the program forwards (SPEC 1). The
        // test reads job_id itself rather than waiting for classify's last line to clear
        // tracked, so the stateful ALUs start one stage earlier.
        if (sym.s.tracked && sym.s.job_id != 0 && drop_ctl == 0) {
            bridge.tracked = 1;
            psn.apply(bth, sym.s, sym.t);
            job_state.apply(sym.s, sym.t);
            throttle.apply(sym.s, sym.t, bridge);
        } else {
            sym.s.tracked = false;
        }
        bridge.job_id = sym.s.job_id;
        bridge.sym_gate = sym.s.sym_gate[15:0];
    }
}

control SymphonyMarker(inout ipv4_h ipv4, in symphony_bridge_h bridge,
                       inout symphony_egress_t sym,
                       in egress_intrinsic_metadata_t eg_intr_md) {
    @name(".SymphonyEgress.queue_mark") QueueMark() queue_mark;
    @name(".SymphonyEgress.ecn_mark") EcnMark() ecn_mark;

    apply {
        queue_mark.apply(ipv4, bridge, sym, eg_intr_md);
        ecn_mark.apply(ipv4, bridge, sym, eg_intr_md.enq_qdepth);
    }
}

#endif
