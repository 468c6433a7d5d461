// Symphony as a library for v1model programs: two controls a forwarding program applies, the
// way fabric-tna composes its controls. Our own top (../symphony.p4) is one such program.
//
// Interface (docs/library.md):
//   headers read    ipv4_h, udp_h, bth_h (../../shared/headers.p4); their valid bits decide
//                   what is Symphony traffic, so the program's parser extracts UDP and, after
//                   UDP destination port 4791, the BTH (only option-less, unfragmented IPv4).
//   metadata        one symphony_meta_t, carried from ingress to egress (v1model keeps user
//                   metadata across the queue, so nothing needs bridging on this target).
//   ingress         SymphonyTracker, after forwarding has chosen (or dropped) the packet:
//                   eligible = no parser error and not dropped, as SPEC 1 asks.
//   egress          SymphonyMarker: the queue ramp and CE; it patches the IPv4 checksum itself.
// P4Runtime names: the tables, registers and counters inside keep absolute names
// (SymphonyIngress.* and SymphonyEgress.*) wherever the program instantiates the controls, so
// the controller drives every program that embeds Symphony the same way.
#ifndef SYMPHONY_V1MODEL_LIB_P4
#define SYMPHONY_V1MODEL_LIB_P4

// Registers and counters are indexed by the 16-bit Job_ID itself (register<T, I>), which saves
// bmv2 a cast per access: the program defines V1MODEL_VERSION 20200408 or later before it
// includes <v1model.p4>.
#if V1MODEL_VERSION < 20200408
#error "Symphony's v1model library needs #define V1MODEL_VERSION 20200408 before <v1model.p4>"
#endif

#include "../../shared/sizes.p4"
#include "../../shared/headers.p4"
#include "../../shared/roce_parser.p4"
#include "../../shared/classify.p4"
#include "psn.p4"
#include "job_state.p4"
#include "throttle.p4"
#include "queue_mark.p4"
#include "ecn_mark.p4"

control SymphonyTracker(in ipv4_h ipv4, in udp_h udp, in bth_h bth,
                        inout symphony_meta_t meta,
                        in bit<48> ingress_global_timestamp,
                        in bool eligible) {
    @name(".SymphonyIngress.classify") Classify() classify;
    @name(".SymphonyIngress.psn") PsnTracker() psn;
    @name(".SymphonyIngress.job_state") JobState() job_state;
    @name(".SymphonyIngress.throttle") Throttle() throttle;

    apply {
        // Malformed RoCE, everything but a BTH and packets the forwarding drops stay untracked:
        // a dropped packet never reaches a queue (the paper examines dequeued packets).
        if (eligible && bth.isValid()) {
            classify.apply(ipv4, udp, bth, meta);
            if (meta.tracked) {
                psn.apply(ipv4, bth, meta);
                // bmv2 timestamps are in microseconds; windows use their low 32 bits.
                job_state.apply(meta, ingress_global_timestamp[31:0]);
                throttle.apply(meta);
            }
        }
    }
}

control SymphonyMarker(inout ipv4_h ipv4, inout symphony_meta_t meta,
                       in standard_metadata_t standard_metadata) {
    @name(".SymphonyEgress.queue_mark") QueueMark() queue_mark;
    @name(".SymphonyEgress.ecn_mark") EcnMark() ecn_mark;

    apply {
        queue_mark.apply(ipv4, meta, standard_metadata);
        ecn_mark.apply(ipv4, meta, standard_metadata.enq_qdepth);
    }
}

#endif
