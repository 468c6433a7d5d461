// Frames per switch port, as on v1model (../../v1model/include/port_counters.p4): what enters
// the pipeline by ingress port, what ingress hands to the traffic manager by egress port, and
// what leaves the traffic manager into egress; the last two differ by the frames the traffic
// manager dropped (the experiments' loss attribution, docs/experiments.md). Any program that
// embeds Symphony can apply them; the names are absolute, as the library's are.
#ifndef SYMPHONY_T2NA_PORT_COUNTERS_P4
#define SYMPHONY_T2NA_PORT_COUNTERS_P4

#include "../../shared/sizes.p4"

// At the end of ingress, after every decision that can drop or redirect the frame.
control PortCountersIn(in ingress_intrinsic_metadata_t ig_intr_md,
                       in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                       in ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Counter<bit<32>, PortId_t>(PORT_SLOTS, CounterType_t.PACKETS) received;
    Counter<bit<32>, PortId_t>(PORT_SLOTS, CounterType_t.PACKETS) enqueued;

    apply {
        received.count(ig_intr_md.ingress_port);
        if (ig_dprsr_md.drop_ctl == 0) {
            enqueued.count(ig_tm_md.ucast_egress_port);
        }
    }
}

control PortCountersOut(in egress_intrinsic_metadata_t eg_intr_md) {
    Counter<bit<32>, PortId_t>(PORT_SLOTS, CounterType_t.PACKETS) dequeued;

    apply {
        dequeued.count(eg_intr_md.egress_port);
    }
}

#endif
