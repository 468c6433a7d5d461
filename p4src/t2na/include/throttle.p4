// SPEC 4.4 and 5 on Tofino2: the same tables, keys and actions as v1model (throttle.p4 there
// explains the arithmetic); comparisons become subtractions whose sign a gateway tests.
// The decision goes straight into the bridged header: a copy after the chain would cost a stage.
control Throttle(inout symphony_meta_t meta, inout symphony_tofino_meta_t t,
                 inout symphony_bridge_h bridge) {
    Counter<bit<32>, job_id_t>(MAX_JOBS, CounterType_t.PACKETS) marks;
    Random<bit<24>>() coin;

    action lut_miss() {
        meta.lut_miss = true;
    }

    // The three lookups are a chain of stages, and each action does its own step of the sum
    // d = log p + k_log - log psn_rec + log alpha, two operands per instruction; action data can
    // only be the first operand of a subtraction, so the partial sum changes sign twice.
    // 16 bits hold it with its sign: every term is below 24 * 256, so d lies in
    // [-6144, 14336] and bit 15 is set exactly when d < 0.
    action set_log_p(log_t value) {
        t.partial = value + meta.k_log;              // log p + k_log
    }

    action set_log_psn_rec(log_t value) {
        t.partial = value - t.partial;               // log psn_rec - log p - k_log
    }

    // alpha is known last (job_state.p4 updates it at the end of its chain), so its log is added
    // last: one stage after the log_psn_rec lookup.
    action set_log_alpha(log_t value) {
        meta.d = value - t.partial;                  // log alpha + log p + k_log - log psn_rec
    }

    // coin < threshold is the sign of threshold - coin (both below 2^25), computed right here:
    // action data may be the first operand of a subtraction, and the gateway after it tests a
    // field. The default (d beyond the table: P >= 1) gives 2^24 - coin > 0, always a mark.
    action set_threshold(bit<32> threshold) {
        meta.threshold = threshold;
        t.coin_diff = threshold - t.coin;
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
        // The coin and the lookups run as soon as their inputs exist; only the threshold
        // lookup waits for every condition of SPEC 5.
        t.coin = (bit<32>)coin.get();
        t.warm_floor = max(meta.psn_rec, meta.n_warmup);
        if (meta.p_known && meta.p != 0) {
            log_p.apply();
            log_psn_rec.apply();
            log_alpha.apply();
            // Outpacing against the new step_min: a LAST moved it past this step; an earlier
            // step moved it onto this step; otherwise it is the old one (job_state.p4).
            // d < 0 means P < 2^-16: no lookup, no mark.
            if (meta.mark_enable == 1 && !meta.is_last
                    && t.step_delta != 0 && t.step_delta[15:15] == 0  // later than step_min
                    && t.warm_floor != meta.n_warmup && !meta.lut_miss && meta.d[15:15] == 0) {
                prob_threshold.apply();
                if (t.coin_diff != 0 && t.coin_diff[31:31] == 0) {
                    meta.symphony_mark = true;
                    bridge.symphony_mark = 1;
                    marks.count(meta.job_id);
                }
            }
        }
    }
}
