// SPEC 6 on Tofino2: the ramp on the dequeue-time queue depth (in 80-byte cells on Tofino2),
// from the same range entries as on bmv2 (model/tables.py::queue_mark_entries).
control QueueMark(in ipv4_h ipv4, in symphony_bridge_h bridge, inout symphony_egress_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md) {
    Counter<bit<32>, job_id_t>(MAX_JOBS, CounterType_t.PACKETS) marks;
    Random<bit<24>>() coin;

    // As in throttle.p4: the action computes threshold - coin, positive iff coin < threshold.
    action set_threshold(bit<32> threshold) {
        meta.threshold = threshold;
        meta.coin_diff = threshold - meta.coin;
    }

    action no_mark() {
        meta.threshold = 0;
        meta.coin_diff = 0;
    }

    table queue_threshold {
        key = {
            eg_intr_md.egress_port: exact @name("egress_port");
            eg_intr_md.deq_qdepth: range @name("deq_qdepth");
        }
        actions = { set_threshold; @defaultonly no_mark; }
        default_action = no_mark();
        size = QUEUE_TABLE_SIZE;
    }

    apply {
        meta.threshold = 0;
        meta.coin_diff = 0;
        meta.coin = (bit<32>)coin.get();
        if (ipv4.isValid()) {
            queue_threshold.apply();
        }
        meta.queue_mark = false;
        if (meta.coin_diff != 0 && meta.coin_diff[31:31] == 0) {
            meta.queue_mark = true;
            if (bridge.tracked == 1) {
                marks.count(bridge.job_id);
            }
        }
    }
}
