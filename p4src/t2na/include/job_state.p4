// SPEC 3 and 4.1-4.3 on Tofino2. Each register is one stateful ALU, visited once per packet; the
// SPEC's sequential steps become a chain of stages (docs/tofino.md has the stage map):
//   win_start (closes the window?), step_min (returns step - old step_min), window_packets
//   -> psn_rec, step_max -> window_ahead_packets, tau_score -> alpha.
// A register whose action depends on the packet gets a small hidden table with constant entries
// that picks exactly one of its RegisterActions: Tofino allows one stateful result per action
// and wants a register addressed the same way in every action of a table.
// Differences from v1model, all covered by the golden model's "tofino2" variant:
// - the window runs on a 1.024 us clock; its unsigned test is made of two serial ones (below);
// - eq. 5 is kept as a running sum
//   tau_score = 256 * window_ahead_packets - tau_q8 * window_packets (no multiplier in a
//   stateful ALU): the same test, exact while a window holds fewer than 2^23 packets.
control JobState(inout symphony_meta_t meta, inout symphony_tofino_meta_t t) {
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) win_start;
    Register<step_t, job_id_t>(MAX_JOBS, 0) step_min;
    Register<step_t, job_id_t>(MAX_JOBS, 0) step_max;
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) psn_rec;
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) window_packets;
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) window_ahead_packets;
    Register<bit<32>, job_id_t>(MAX_JOBS, 0) tau_score;
    Register<bit<8>, job_id_t>(MAX_JOBS, 0) alpha;  // alpha - 1: an all-zero slot is a new job
    Counter<bit<32>, job_id_t>(MAX_JOBS, CounterType_t.PACKETS) packets;

    // 1. Window rollover: now - win_start >= T_win, unsigned and wrap-safe (SPEC 4.1). A stateful
    // ALU compares the sign of a two-operand sum, so the test is split in two: the serial test
    // win_start + (T_win - now) <= 0 (T_win - now comes with the parameters), or a gap of 2^31
    // ticks or more, which the serial test reads backwards (a fresh job's win_start 0 on a switch
    // up for more than 2^31 ticks, or a job idle that long). Together they are exactly the
    // unsigned test while T_win < 2^31, which the parameters enforce (model/params.py).
    RegisterAction<bit<32>, job_id_t, bit<1>>(win_start) window = {
        void apply(inout bit<32> value, out bit<1> closed) {
            if ((int<32>)(value + meta.win_offset) <= 0 || (int<32>)(meta.now - value) < 0) {
                value = meta.now;
                closed = 1;
            } else {
                closed = 0;
            }
        }
    };

    // 3. Progress: step_min. Each action returns step - old step_min (the spare ALU of a
    // single-width register computes it), so the serial order is known one stage earlier.
    RegisterAction<step_t, job_id_t, step_t>(step_min) step_last = {
        void apply(inout step_t value, out step_t delta) {
            delta = meta.step - value;
            value = meta.step + 1;
        }
    };
    RegisterAction<step_t, job_id_t, step_t>(step_min) step_other = {
        void apply(inout step_t value, out step_t delta) {
            delta = meta.step - value;
            if ((int<16>)(meta.step - value) < 0) {
                value = meta.step;
            }
        }
    };

    // 3. Progress: psn_rec, with the window reset folded in: set to p, zero, max or keep.
    RegisterAction<bit<32>, job_id_t, bit<32>>(psn_rec) psn_rec_set = {
        void apply(inout bit<32> value, out bit<32> now_value) {
            value = (bit<32>)meta.p;
            now_value = value;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(psn_rec) psn_rec_zero = {
        void apply(inout bit<32> value, out bit<32> now_value) {
            value = 0;
            now_value = 0;
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

    // 2. Traffic stats; at a rollover they restart from this packet. window_packets' restart
    // says whether the closed window had at least N_sample packets; tau_score's returns its
    // score.
    RegisterAction<bit<32>, job_id_t, bit<1>>(window_packets) total_restart = {
        void apply(inout bit<32> value, out bit<1> enough) {
            enough = 0;
            if (value >= meta.n_sample) {
                enough = 1;
            }
            value = 1;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<1>>(window_packets) total_count = {
        void apply(inout bit<32> value, out bit<1> first) {
            if (value == 0) {
                first = 1;
            } else {
                first = 0;
            }
            value = value + 1;
        }
    };

    // 2. step_max, the window's highest step (the live overlap's upper end): its first packet
    // (a fresh job, or the window just closed) sets it, later ones raise it serially.
    RegisterAction<step_t, job_id_t, step_t>(step_max) step_max_set = {
        void apply(inout step_t value) {
            value = meta.step;
        }
    };
    RegisterAction<step_t, job_id_t, step_t>(step_max) step_max_raise = {
        void apply(inout step_t value) {
            if ((int<16>)(meta.step - value) > 0) {
                value = meta.step;
            }
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(window_ahead_packets) op_restart_later = {
        void apply(inout bit<32> value) {
            value = 1;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(window_ahead_packets) op_restart = {
        void apply(inout bit<32> value) {
            value = 0;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(window_ahead_packets) op_count = {
        void apply(inout bit<32> value) {
            value = value + 1;
        }
    };
    // The two increments of eq. 5 (256 - tau_q8 for an outpacing packet, -tau_q8 otherwise)
    // are computed from the job's parameters before the step is known (t.tau_up, t.tau_down).
    RegisterAction<bit<32>, job_id_t, bit<32>>(tau_score) score_restart_up = {
        void apply(inout bit<32> value, out bit<32> old) {
            old = value;
            value = (bit<32>)t.tau_up;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(tau_score) score_restart_down = {
        void apply(inout bit<32> value, out bit<32> old) {
            old = value;
            value = (bit<32>)t.tau_down;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(tau_score) score_up = {
        void apply(inout bit<32> value) {
            value = value + (bit<32>)t.tau_up;
        }
    };
    RegisterAction<bit<32>, job_id_t, bit<32>>(tau_score) score_down = {
        void apply(inout bit<32> value) {
            value = value + (bit<32>)t.tau_down;
        }
    };

    // 1. alpha (stored minus one): up to alpha_max, down to 1, or unchanged.
    RegisterAction<bit<8>, job_id_t, bit<8>>(alpha) alpha_up = {
        void apply(inout bit<8> value, out bit<8> now_value) {
            if (value < t.alpha_max_m1) {
                value = value + 1;
            } else {
                value = t.alpha_max_m1;
            }
            now_value = value;
        }
    };
    RegisterAction<bit<8>, job_id_t, bit<8>>(alpha) alpha_down = {
        void apply(inout bit<8> value, out bit<8> now_value) {
            if (value > 0) {
                value = value - 1;
            }
            now_value = value;
        }
    };
    RegisterAction<bit<8>, job_id_t, bit<8>>(alpha) alpha_read = {
        void apply(inout bit<8> value, out bit<8> now_value) {
            now_value = value;
        }
    };

    // Off the critical path, in a table of its own (its constants are action data, which an
    // action that also indexes a register by a hash cannot carry): what eq. 5 adds for an
    // outpacing packet and for any other, and alpha_max - 1.
    @hidden action derive() {
        t.tau_up = 256 - (int<32>)(bit<32>)meta.tau_q8;
        t.tau_down = 0 - (int<32>)(bit<32>)meta.tau_q8;
        t.alpha_max_m1 = meta.alpha_max - 1;
    }

    @hidden table derive_params {
        actions = { derive; }
        const default_action = derive();
        size = 1;
    }

    // 3. step_min: a LAST moves it past its step, any other packet pulls it back to an earlier
    // step. A table picks the action, so the stateful ALU runs exactly one.
    @hidden action step_last_a() {
        t.step_delta = step_last.execute(meta.job_id);
    }

    @hidden action step_other_a() {
        t.step_delta = step_other.execute(meta.job_id);
    }

    @hidden table step_update {
        key = { meta.is_last: exact; }
        actions = { step_last_a; step_other_a; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 2;
        const entries = {
            true: step_last_a();
            false: step_other_a();
        }
    }

    // 2. The window's counters: restart at a rollover, count otherwise; an outpacing packet
    // counts in window_ahead_packets and adds 256 - tau_q8 to the score. One small table per
    // register picks the case (Tofino allows one stateful result per action and address), so
    // each stateful ALU runs exactly one of its actions.
    @hidden action total_restart_a() {
        t.enough = total_restart.execute(meta.job_id);
        t.first = 1;
    }

    @hidden action total_count_a() {
        t.first = total_count.execute(meta.job_id);
    }

    @hidden table total_stats {
        key = { t.rollover: exact; }
        actions = { total_restart_a; total_count_a; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 2;
        const entries = {
            1: total_restart_a();
            0: total_count_a();
        }
    }

    // step_max after window_packets (it needs t.first), beside psn_rec: no stage of its own,
    // and nothing later in the pipeline reads it.
    @hidden action step_max_set_a() {
        step_max_set.execute(meta.job_id);
    }

    @hidden action step_max_raise_a() {
        step_max_raise.execute(meta.job_id);
    }

    @hidden table step_max_update {
        key = { t.first: exact; }
        actions = { step_max_set_a; step_max_raise_a; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 2;
        const entries = {
            1: step_max_set_a();
            0: step_max_raise_a();
        }
    }

    @hidden action op_restart_later_a() {
        op_restart_later.execute(meta.job_id);
    }

    @hidden action op_restart_a() {
        op_restart.execute(meta.job_id);
    }

    @hidden action op_count_a() {
        op_count.execute(meta.job_id);
    }

    // Keyed on step - old step_min itself: zero is the same step, the top bit set an earlier one,
    // anything else is later (an outpacing packet). No separate "later" flag, no stage for it.
    @hidden table op_stats {
        key = {
            t.rollover: exact;
            t.step_delta: ternary;
        }
        actions = { op_restart_later_a; op_restart_a; op_count_a; NoAction; }
        const default_action = NoAction();
        size = 8;
        const entries = {
            (1, 0 &&& 0xFFFF): op_restart_a();
            (1, 0x8000 &&& 0x8000): op_restart_a();
            (1, _): op_restart_later_a();
            (0, 0 &&& 0xFFFF): NoAction();
            (0, 0x8000 &&& 0x8000): NoAction();
            (0, _): op_count_a();
        }
    }

    @hidden action score_restart_up_a() {
        t.old_score = score_restart_up.execute(meta.job_id);
    }

    @hidden action score_restart_down_a() {
        t.old_score = score_restart_down.execute(meta.job_id);
    }

    @hidden action score_up_a() {
        score_up.execute(meta.job_id);
    }

    @hidden action score_down_a() {
        score_down.execute(meta.job_id);
    }

    @hidden table score_stats {
        key = {
            t.rollover: exact;
            t.step_delta: ternary;  // as in op_stats
        }
        actions = {
            score_restart_up_a; score_restart_down_a; score_up_a; score_down_a;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = 8;
        const entries = {
            (1, 0 &&& 0xFFFF): score_restart_down_a();
            (1, 0x8000 &&& 0x8000): score_restart_down_a();
            (1, _): score_restart_up_a();
            (0, 0 &&& 0xFFFF): score_down_a();
            (0, 0x8000 &&& 0x8000): score_down_a();
            (0, _): score_up_a();
        }
    }

    // 1. alpha: at a rollover of a window with at least N_sample packets, up if its score is
    // >= 0 (eq. 5), else down; otherwise read.
    @hidden action alpha_inc() {
        t.alpha_stored = alpha_up.execute(meta.job_id);
    }

    @hidden action alpha_dec() {
        t.alpha_stored = alpha_down.execute(meta.job_id);
    }

    @hidden action alpha_get() {
        t.alpha_stored = alpha_read.execute(meta.job_id);
    }

    @hidden table alpha_update {
        key = {
            t.rollover: ternary;
            t.enough: ternary;
            t.old_score: ternary;  // its sign bit (two's complement)
        }
        actions = { alpha_inc; alpha_dec; alpha_get; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 4;
        const entries = {
            (1, 1, 0 &&& 0x80000000): alpha_inc();
            (1, 1, 0x80000000 &&& 0x80000000): alpha_dec();
            (_, _, _): alpha_get();
        }
    }

    // psn_rec: LAST -> 0; earlier -> p (0 if unknown); same step with known p -> max; a closed
    // window starts from 0 first. One table picks the action, so the four are exclusive.
    @hidden action rec_zero() {
        meta.psn_rec = (psn_t)psn_rec_zero.execute(meta.job_id);
    }

    @hidden action rec_set() {
        meta.psn_rec = (psn_t)psn_rec_set.execute(meta.job_id);
    }

    @hidden action rec_max() {
        meta.psn_rec = (psn_t)psn_rec_max.execute(meta.job_id);
    }

    @hidden action rec_keep() {
        meta.psn_rec = (psn_t)psn_rec_keep.execute(meta.job_id);
    }

    @hidden table psn_rec_update {
        key = {
            meta.is_last: ternary;
            t.step_delta: ternary;  // sign bit: earlier; all zero: same step
            meta.p_known: ternary;
            t.rollover: ternary;
        }
        actions = { rec_zero; rec_set; rec_max; rec_keep; @defaultonly NoAction; }
        // A register action cannot be the miss action here; the last entry catches all.
        const default_action = NoAction();
        size = 8;
        const entries = {
            (true, _, _, _): rec_zero();
            (false, 0x8000 &&& 0x8000, true, _): rec_set();
            (false, 0x8000 &&& 0x8000, false, _): rec_zero();
            (false, 0, true, 1): rec_set();
            (false, _, _, 1): rec_zero();
            (false, 0, true, _): rec_max();
            (_, _, _, _): rec_keep();
        }
    }

    // Statements in the order the stages can run them: Tofino places the tables of one sequence
    // in that sequence's order, so a table written early cannot wait for one written before it.
    apply {
        job_id_t job = meta.job_id;
        // Stage A: the window, step_min and the derived constants need only the parameters.
        t.rollover = window.execute(job);
        step_update.apply();
        derive_params.apply();
        packets.count(job);
        // Stage A+1: the window's counters restart or count (rollover, step_delta).
        total_stats.apply();
        step_max_update.apply();
        op_stats.apply();
        score_stats.apply();
        // Stage A+2: psn_rec (needs p, one stage after the flow slot) and alpha (needs the
        // closed window's score and count).
        psn_rec_update.apply();
        alpha_update.apply();
        meta.alpha = t.alpha_stored + 1;
    }
}
