// Frames per switch port, for the experiments' loss attribution (docs/experiments.md, "Where a
// frame is lost"). simple_switch drops a frame silently when an egress queue is full (it ignores
// the queue's push result) and has no drop count over Thrift, so the program counts what goes
// into each egress queue and what comes out of it: once the queues are empty, their difference
// is the queue's drops. `received`, by ingress port, against the kernel's count of frames
// delivered to the switch's interface, is what bmv2 lost before its pipeline (its capture).
#ifndef SYMPHONY_V1MODEL_PORT_COUNTERS_P4
#define SYMPHONY_V1MODEL_PORT_COUNTERS_P4

#include "../../shared/sizes.p4"

// At the end of ingress, after every decision that can drop or redirect the frame.
control PortCountersIn(in standard_metadata_t standard_metadata) {
    counter<bit<9>>(PORT_SLOTS, CounterType.packets) received;
    counter<bit<9>>(PORT_SLOTS, CounterType.packets) enqueued;

    apply {
        received.count(standard_metadata.ingress_port);
        // mark_to_drop() sends a frame to port 511: it never reaches a queue.
        if (standard_metadata.egress_spec != 511) {
            enqueued.count(standard_metadata.egress_spec);
        }
    }
}

control PortCountersOut(in standard_metadata_t standard_metadata) {
    counter<bit<9>>(PORT_SLOTS, CounterType.packets) dequeued;

    apply {
        dequeued.count(standard_metadata.egress_port);
    }
}

#endif
