// The ACK class on Tofino2, as on v1model (../../v1model/include/ack_priority.p4, which says
// what and why): the same table, filled by the controller only when the switch's config turns
// the class on; the action picks the egress queue instead of a bmv2 priority.
#ifndef SYMPHONY_T2NA_ACK_PRIORITY_P4
#define SYMPHONY_T2NA_ACK_PRIORITY_P4

#include "../../shared/sizes.p4"
#include "../../shared/headers.p4"

// The class's queue id; data keeps queue 0. controller/symphony/sizes.py repeats it.
const bit<7> ACK_QID = 1;

// The queue id in a PHV container of its own. Sharing one with the route's ECMP group tied this
// table to the route's by an action dependency "due to PHV allocation" (table_placement_1.log):
// applied first it pushed the route a stage later, applied last it landed in stage 4 and pushed
// the job state; either way 12 stages. Alone, it fits in a stage with room (6 today), and
// symphony.p4 stays at 11 (docs/tofino.md).
@pa_solitary("ingress", "ig_intr_md_for_tm.qid")
control AckPriority(in bth_h bth, inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    // P4 only chooses the queue: that queue ACK_QID is served strictly before data's queue 0 is
    // the traffic manager's configuration, outside P4Runtime. With Intel's SDE, bf-rt's
    // tf2.tm.queue.sched_cfg for the (pg_id, pg_queue) the port's queue ACK_QID maps to:
    // min_priority and max_priority above queue 0's (queues of one priority share by DWRR
    // weight); with stratum, its chassis config's queue settings (docs/ack_priority.md,
    // "Tofino2"). Left at the SDE's defaults, the two queues have the same priority and share
    // the port by weight: the class then has a queue of its own, not precedence.
    action to_ack_queue() {
        ig_tm_md.qid = (QueueId_t)ACK_QID;
    }

    table ack_class {
        key = { bth.opcode: exact @name("opcode"); }
        actions = { to_ack_queue; @defaultonly NoAction; }
        const default_action = NoAction();
        size = ACK_CLASS_TABLE_SIZE;
    }

    apply {
        if (bth.isValid()) {
            ack_class.apply();
        }
    }
}

#endif
