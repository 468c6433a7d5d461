// SPEC 3 and 4.1-4.3: the per-job registers and their update, in the SPEC's order.
// bmv2 interprets every primitive, each a GMP big-integer operation, so this form does only what
// a packet needs: the registers are indexed by the 16-bit Job_ID itself (no cast per access),
// each register is written where its value changes and nowhere else, window_ahead_packets and
// alpha are read only where they are used, and the serial step comparisons take one or two
// operations (docs/measurements/bmv2-ratio-issue12.md).
// bmv2 runs one packet's register accesses in program order, so a read after a write in the same
// packet sees the new value.
control JobState(inout symphony_meta_t meta, in bit<32> now) {
    register<step_t, job_id_t>(MAX_JOBS) step_min;
    register<psn_t, job_id_t>(MAX_JOBS) psn_rec;
    register<step_t, job_id_t>(MAX_JOBS) step_max;      // highest step of the window: the live overlap
    register<bit<8>, job_id_t>(MAX_JOBS) alpha;         // alpha - 1: an all-zero slot is a new job
    register<bit<32>, job_id_t>(MAX_JOBS) window_packets;
    register<bit<32>, job_id_t>(MAX_JOBS) window_ahead_packets;
    register<bit<32>, job_id_t>(MAX_JOBS) win_start;
    counter<job_id_t>(MAX_JOBS, CounterType.packets) packets;

    // Algorithm 1, line 5 (a step's last packet): the step is complete.
    @hidden action complete_step() {
        meta.step_min = meta.step + 1;
        meta.psn_rec = 0;
        step_min.write(meta.job_id, meta.step_min);
        psn_rec.write(meta.job_id, 0);
    }

    apply {
        step_t smax;
        bit<32> total;
        bit<32> start;
        step_min.read(meta.step_min, meta.job_id);
        psn_rec.read(meta.psn_rec, meta.job_id);
        step_max.read(smax, meta.job_id);
        window_packets.read(total, meta.job_id);
        win_start.read(start, meta.job_id);
        // This packet is counted at once, beside the reads (one table fewer for bmv2); a window
        // that closes below restarts window_packets at 1 instead.
        window_packets.write(meta.job_id, total + 1);
        packets.count(meta.job_id);

        // 1. Window rollover (unsigned, wrap-safe). Eq. 5 without division:
        //    window_ahead_packets >= tau * window_packets
        //    <=>  window_ahead_packets * 256 >= tau_q8 * window_packets.
        if (now - start >= meta.t_win) {
            if (total >= meta.n_sample) {
                bit<32> op;
                bit<8> am1;
                window_ahead_packets.read(op, meta.job_id);
                alpha.read(am1, meta.job_id);
                bit<8> a = am1 + 1;  // alpha itself
                if ((bit<48>)op * 256 >= (bit<48>)meta.tau_q8 * (bit<48>)total) {
                    a = a >= meta.alpha_max ? meta.alpha_max : a + 1;
                } else if (a > 1) {
                    a = a - 1;
                }
                alpha.write(meta.job_id, a - 1);
            }
            total = 0;
            meta.psn_rec = 0;
            psn_rec.write(meta.job_id, 0);
            window_ahead_packets.write(meta.job_id, 0);
            window_packets.write(meta.job_id, 1);
            win_start.write(meta.job_id, now);
        }

        // 2. Traffic stats, against step_min before this packet's own update. Steps compare as
        //    serial numbers: d in 1..2^15-1 is later, 2^15..2^16-1 is earlier.
        //    The window's first packet (total still 0: a new job or a window just closed) sets
        //    step_max, so it resets with the window; later ones raise it (serially).
        if (total == 0 || (meta.step != smax && meta.step - smax < 0x8000)) {
            step_max.write(meta.job_id, meta.step);
        }

        // 3. Progress (Algorithm 1, lines 3-10): assignments, so duplicates are idempotent. A
        //    later step also counts for eq. 5 (window_ahead_packets), and unless it completes its
        //    step it is still later than step_min afterwards: the packet is outpacing, and only
        //    then does the throttle need alpha (its log_alpha key), so only then is alpha read.
        if (meta.step == meta.step_min) {
            if (meta.is_last) {
                complete_step();
            } else if (meta.p > meta.psn_rec) {     // p is 0 when unknown (psn.p4)
                meta.psn_rec = meta.p;
                psn_rec.write(meta.job_id, meta.p);
            }
        } else if (meta.step - meta.step_min < 0x8000) {
            bit<32> op;
            bit<8> am1;
            window_ahead_packets.read(op, meta.job_id);
            window_ahead_packets.write(meta.job_id, op + 1);
            meta.outpacing = !meta.is_last;
            alpha.read(am1, meta.job_id);
            meta.alpha = am1 + 1;
            if (meta.is_last) {
                complete_step();
            }
        } else if (meta.is_last) {
            complete_step();
        } else {
            meta.step_min = meta.step;
            meta.psn_rec = meta.p;
            step_min.write(meta.job_id, meta.step);
            psn_rec.write(meta.job_id, meta.p);
        }
    }
}
