// The ACK class (docs/ack_priority.md): RoCEv2 frames that carry no data but hold a sender up
// when they wait (RC ACKNOWLEDGE and ATOMIC ACKNOWLEDGE, which release the sender's window, and
// CNPs, which DCQCN reacts to) leave from a priority queue of their own, ahead of the data
// queued on the same port. The controller fills the table, one entry per opcode, only on a
// switch whose config says `ack_priority = true`: empty, every frame keeps priority 0 and the
// switch queues as it did before the class existed. Symphony never sees the difference: these
// opcodes are not step traffic (SPEC 1), so the class changes queues, not state or marks.
#ifndef SYMPHONY_V1MODEL_ACK_PRIORITY_P4
#define SYMPHONY_V1MODEL_ACK_PRIORITY_P4

#include "../../shared/sizes.p4"
#include "../../shared/headers.p4"

// The class's priority. bmv2 serves the highest priority value first (simple_switch and
// queueing.h since behavioral-model#1276, checked by ptf_tests/test_ack_priority.py) and drops a
// frame whose priority is not below its --priority-queues (bmv2_env/env.sh starts it with 2).
// Data keeps priority 0, the queue it always had. controller/symphony/sizes.py repeats it.
const bit<3> ACK_PRIORITY = 1;

control AckPriority(in bth_h bth, inout standard_metadata_t standard_metadata) {
    // bmv2 enqueues on priority queue `priority` of the egress port and serves the highest
    // non-empty one whose rate limiter lets it send (bm_sim/queueing.h, QueueingLogicPriRL);
    // each priority queue has its own rate, so on an emulated link the class gets its own
    // bandwidth on top of data's (docs/ack_priority.md, "bmv2").
    action to_ack_queue() {
        standard_metadata.priority = ACK_PRIORITY;
    }

    table ack_class {
        key = { bth.opcode: exact @name("opcode"); }
        actions = { to_ack_queue; @defaultonly NoAction; }
        const default_action = NoAction();
        size = ACK_CLASS_TABLE_SIZE;
    }

    apply {
        // Any parsed BTH (a RoCEv2 frame the parser reached): the opcode alone decides.
        if (bth.isValid()) {
            ack_class.apply();
        }
    }
}

#endif
