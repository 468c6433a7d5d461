// SPEC 3 and 4.1-4.3 on Tofino2. Each register is one stateful ALU, visited once per packet; the
// SPEC's sequential steps become a chain of stages:
//   win_start (closes the window?)  step_min (old value)  ->  flags in the MAU
//   -> psn_rec, cnt_total, cnt_op, tau_score  ->  alpha command in the MAU  ->  alpha_m1.
// Differences from v1model, all covered by the golden model's "tofino2" variant:
// - the window test is serial (signed 32-bit) on a 1.024 us clock: a job idle for more than
//   2^31 ticks (36 minutes) may see one stale window, never a wrong alpha step;
// - eq. 5 is kept as a running sum tau_score = 256 * cnt_op - tau_q8 * cnt_total (no multiplier
//   in a stateful ALU): the same test, exact while a window holds fewer than 2^23 packets.
control JobState(inout symphony_meta_t meta, inout tofino_meta_t t) {
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) win_start;
    Register<step_t, job_id_t>(MAX_JOBS, 0) step_min;
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) psn_rec;
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) cnt_total;
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) cnt_op;
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) tau_score;
    Register<bit<8>, job_id_t>(MAX_JOBS, 0) alpha_m1;
    Counter<bit<32>, job_id_t>(MAX_JOBS, CounterType_t.PACKETS) packets;

    // 1. Window rollover.
    RegisterAction<bit<32>, job_id_t, bit<1>>(win_start) window = {
        void apply(inout bit<32> value, out bit<1> closed) {
            if ((int<32>)value <= t.win_limit) {
                value = t.now;
                closed = 1;
            } else {
                closed = 0;
            }
        }
    };

    // 3. Progress: step_min (returns the value before this packet, for 2. and 4.).
    RegisterAction<step_t, job_id_t, step_t>(step_min) step_last = {
        void apply(inout step_t value, out step_t old) {
            old = value;
            value = t.step_plus_1;
        }
    };
    RegisterAction<step_t, job_id_t, step_t>(step_min) step_other = {
        void apply(inout step_t value, out step_t old) {
            old = value;
            if ((int<16>)(meta.step - value) < 0) {
                value = meta.step;
            }
        }
    };

    // 3. Progress: psn_rec, with the window reset folded in (set / max / keep).
    RegisterAction<bit<32>, job_id_t, bit<32>>(psn_rec) psn_rec_set = {
        void apply(inout bit<32> value, out bit<32> now_value) {
            value = (bit<32>)t.psn_rec_set;
            now_value = value;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(psn_rec) psn_rec_max = {
        void apply(inout bit<32> value, out bit<32> now_value) {
            if ((bit<32>)meta.p > value) {
                value = (bit<32>)meta.p;
            }
            now_value = value;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(psn_rec) psn_rec_keep = {
        void apply(inout bit<32> value, out bit<32> now_value) {
            now_value = value;
        }
    };

    // 2. Traffic stats; at a rollover they restart from this packet and return the old window.
    RegisterAction<bit<32>, job_id_t, bit<32>>(cnt_total) total_restart = {
        void apply(inout bit<32> value, out bit<32> old) {
            old = value;
            value = 1;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(cnt_total) total_count = {
        void apply(inout bit<32> value) {
            value = value + 1;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(cnt_op) op_restart = {
        void apply(inout bit<32> value) {
            value = (bit<32>)t.later;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(cnt_op) op_count = {
        void apply(inout bit<32> value) {
            value = value + (bit<32>)t.later;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(tau_score) score_restart = {
        void apply(inout bit<32> value, out bit<32> old) {
            old = value;
            value = (bit<32>)t.tau_inc;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(tau_score) score_count = {
        void apply(inout bit<32> value) {
            value = value + (bit<32>)t.tau_inc;
        }
    };

    // 1. alpha (stored minus one): up to alpha_max, down to 1, or unchanged.
    RegisterAction<bit<8>, job_id_t, bit<8>>(alpha_m1) alpha_up = {
        void apply(inout bit<8> value, out bit<8> now_value) {
            if (value < t.alpha_max_m1) {
                value = value + 1;
            } else {
                value = t.alpha_max_m1;
            }
            now_value = value;
        }
    };
    RegisterAction<bit<8>, job_id_t, bit<8>>(alpha_m1) alpha_down = {
        void apply(inout bit<8> value, out bit<8> now_value) {
            if (value > 0) {
                value = value - 1;
            }
            now_value = value;
        }
    };
    RegisterAction<bit<8>, job_id_t, bit<8>>(alpha_m1) alpha_read = {
        void apply(inout bit<8> value, out bit<8> now_value) {
            now_value = value;
        }
    };

    apply {
        job_id_t job = meta.job_id;
        t.win_limit = (int<32>)(t.now - meta.t_win);
        t.rollover = window.execute(job);

        t.step_plus_1 = meta.step + 1;
        if (meta.is_last) {
            t.old_step_min = step_last.execute(job);
        } else {
            t.old_step_min = step_other.execute(job);
        }
        t.step_delta = meta.step - t.old_step_min;
        t.later = 0;
        t.earlier = t.step_delta[15:15];
        if (t.step_delta != 0 && t.step_delta[15:15] == 0) {
            t.later = 1;
        }

        // psn_rec: LAST -> 0; earlier -> p (0 if unknown); same step with known p -> max;
        // a closed window starts from 0 first.
        bool same_known = t.step_delta == 0 && meta.p_known;
        t.psn_rec_set = 0;
        if (!meta.is_last && t.earlier == 1) {
            t.psn_rec_set = meta.p;
        } else if (!meta.is_last && same_known && t.rollover == 1) {
            t.psn_rec_set = meta.p;
        }
        if (meta.is_last || t.earlier == 1 || t.rollover == 1) {
            meta.psn_rec = (psn_t)psn_rec_set.execute(job);
        } else if (same_known) {
            meta.psn_rec = (psn_t)psn_rec_max.execute(job);
        } else {
            meta.psn_rec = (psn_t)psn_rec_keep.execute(job);
        }

        int<32> tau_down = -(int<32>)(bit<32>)meta.tau_q8;
        t.tau_inc = tau_down;
        if (t.later == 1) {
            t.tau_inc = 256 + tau_down;
        }
        t.old_total = 0;
        t.old_score = 0;
        if (t.rollover == 1) {
            t.old_total = total_restart.execute(job);
            op_restart.execute(job);
            t.old_score = (int<32>)score_restart.execute(job);
        } else {
            total_count.execute(job);
            op_count.execute(job);
            score_count.execute(job);
        }

        t.alpha_max_m1 = meta.alpha_max - 1;
        t.total_floor = max(t.old_total, meta.n_sample);
        if (t.rollover == 1 && t.total_floor == t.old_total) {
            if (((bit<32>)t.old_score)[31:31] == 0) {
                t.alpha_m1 = alpha_up.execute(job);
            } else {
                t.alpha_m1 = alpha_down.execute(job);
            }
        } else {
            t.alpha_m1 = alpha_read.execute(job);
        }
        meta.alpha = t.alpha_m1 + 1;
        packets.count(job);
    }
}
