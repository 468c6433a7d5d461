// SPEC 4.4 and 5 on Tofino2: the same tables, keys and actions as v1model (throttle.p4 there
// explains the arithmetic); comparisons become subtractions whose sign a gateway tests.
control Throttle(inout symphony_meta_t meta, inout tofino_meta_t t) {
    Counter<bit<32>, job_id_t>(MAX_JOBS, CounterType_t.PACKETS) marks;
    Random<bit<24>>() coin;

    action lut_miss() {
        meta.lut_miss = true;
    }

    action set_log_p(log_t value) {
        meta.log_p = value;
    }

    action set_log_psn_rec(log_t value) {
        meta.log_psn_rec = value;
    }

    action set_log_alpha(log_t value) {
        meta.log_alpha = value;
    }

    action set_threshold(bit<32> threshold) {
        meta.threshold = threshold;
    }

    table log_p {
        key = { meta.p: lpm @name("p"); }
        actions = { set_log_p; @defaultonly lut_miss; }
        default_action = lut_miss();
        size = LOG_TABLE_SIZE;
    }

    table log_psn_rec {
        key = { meta.psn_rec: lpm @name("psn_rec"); }
        actions = { set_log_psn_rec; @defaultonly lut_miss; }
        default_action = lut_miss();
        size = LOG_TABLE_SIZE;
    }

    table log_alpha {
        key = { meta.alpha: exact @name("alpha"); }
        actions = { set_log_alpha; @defaultonly lut_miss; }
        default_action = lut_miss();
        size = ALPHA_TABLE_SIZE;
    }

    table prob_threshold {
        key = { meta.d: exact @name("d"); }
        actions = { set_threshold; }
        default_action = set_threshold(COIN_ALWAYS);
        size = PROB_TABLE_SIZE;
    }

    apply {
        meta.symphony_mark = false;
        meta.threshold = 0;
        // Outpacing against the new step_min: a LAST moved it past this step; an earlier step
        // moved it onto this step; otherwise it is the old one (job_state.p4).
        t.warm_floor = max(meta.psn_rec, meta.n_warmup);
        if (meta.mark_enable == 1 && !meta.is_last && t.later == 1
                && t.warm_floor != meta.n_warmup && meta.p_known && meta.p != 0) {
            // alpha is known last (job_state.p4 updates it at the end of the chain), so the
            // sum is ordered to add its log last: one stage after the log_alpha lookup.
            log_p.apply();
            log_psn_rec.apply();
            log_alpha.apply();
            t.lhs = (bit<32>)meta.log_p + (bit<32>)meta.k_log;
            t.lhs = t.lhs - (bit<32>)meta.log_psn_rec;
            t.d32 = t.lhs + (bit<32>)meta.log_alpha;
            meta.d = t.d32[15:0];
            // d32 < 0 means P < 2^-16: no lookup, no mark.
            if (!meta.lut_miss && t.d32[31:31] == 0) {
                prob_threshold.apply();
                t.coin = (bit<32>)coin.get();
                t.coin_diff = meta.threshold - t.coin;
                if (t.coin_diff != 0 && t.coin_diff[31:31] == 0) {
                    meta.symphony_mark = true;
                    marks.count(meta.job_id);
                }
            }
        }
    }
}
