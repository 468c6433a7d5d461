// SPEC 6: the ordinary RED-like ECN ramp on the dequeue-time queue depth, per egress port. The
// controller installs the ramp as range entries (model/tables.py::queue_mark_entries); a port
// without entries never marks.
control QueueMark(in ipv4_h ipv4, inout symphony_meta_t meta,
                  in standard_metadata_t standard_metadata) {
    counter<job_id_t>(MAX_JOBS, CounterType.packets) marks;
    bit<32> ramp_threshold = 0;

    action set_threshold(bit<32> threshold) {
        ramp_threshold = threshold;
    }

    action no_mark() {
        ramp_threshold = 0;
    }

    table queue_threshold {
        key = {
            standard_metadata.egress_port: exact @name("egress_port");
            standard_metadata.deq_qdepth: range @name("deq_qdepth");
        }
        actions = { set_threshold; @defaultonly no_mark; }
        default_action = no_mark();
        size = QUEUE_TABLE_SIZE;
    }

    apply {
        meta.queue_mark = false;
        if (ipv4.isValid()) {
            queue_threshold.apply();
            bit<32> coin;
            random(coin, 0, COIN_MAX);
            meta.queue_mark = coin < ramp_threshold;
            if (meta.queue_mark && meta.tracked) {
                marks.count(meta.job_id);
            }
        }
    }
}
