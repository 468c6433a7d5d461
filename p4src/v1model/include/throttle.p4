// SPEC 4.4 and 5: P = min(1, k * alpha * p / psn_rec) without division. Fixed-point logs come
// from lookup tables the controller generates from the golden model (model/tables.py):
//   d = log2 p + log2 alpha + k_log - log2 psn_rec      (k_log = (log2 k + 16) * 256)
// and a table maps d to a coin threshold; d >= 16 * 256 means P >= 1 (the default: always).
control Throttle(inout symphony_meta_t meta) {
    counter<job_id_t>(MAX_JOBS, CounterType.packets) marks;

    // A miss on a log table means the controller has not installed them: never mark then.
    action lut_miss() {
        meta.lut_miss = true;
    }

    // The lookups run in this order and each action does its step of the sum
    // d = log p + k_log - log psn_rec + log alpha, so no primitive adds the terms afterwards.
    // 32 bits, modulo 2^32: every term is below 2^16, so d >= 0 exactly when the sum is below
    // 2^31, and then the sum is d; prob_threshold's key is its low 16 bits (the 16-bit d).
    action set_log_p(log_t value) {
        meta.log_sum = (bit<32>)value + (bit<32>)meta.k_log;
    }

    action set_log_psn_rec(log_t value) {
        meta.log_sum = meta.log_sum - (bit<32>)value;
    }

    action set_log_alpha(log_t value) {
        meta.log_sum = meta.log_sum + (bit<32>)value;
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
        key = { meta.log_sum[15:0]: exact @name("d"); }   // d (see the actions above)
        actions = { set_threshold; }
        default_action = set_threshold(COIN_ALWAYS);
        size = PROB_TABLE_SIZE;
    }

    apply {
        // No mark for lagging packets, during warm-up, with unknown progress or with p = 0
        // (P = 0 exactly; log2 0 has no entry): p = 0 covers both (psn.p4). job_state.p4 has
        // found out whether the packet is outpacing. symphony_mark and threshold start at 0
        // (v1model zeroes metadata for every packet).
        if (meta.outpacing && meta.mark_enable == 1 && meta.psn_rec > meta.n_warmup
                && meta.p != 0) {
            log_p.apply();
            log_psn_rec.apply();
            log_alpha.apply();
            // d < 0 means P < 2^-16: below the table's domain, no mark.
            if (!meta.lut_miss && meta.log_sum < 0x80000000) {
                bit<32> coin;
                random(coin, 0, COIN_MAX);
                prob_threshold.apply();
                if (coin < meta.threshold) {
                    meta.symphony_mark = true;
                    marks.count(meta.job_id);
                }
            }
        }
    }
}
