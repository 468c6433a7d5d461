// SPEC 3 and 4.1-4.3: the per-job registers and their update, in the SPEC's order.
control JobState(inout symphony_meta_t meta, in bit<32> now) {
    register<step_t>(MAX_JOBS) step_min;
    register<psn_t>(MAX_JOBS) psn_rec;
    register<step_t>(MAX_JOBS) step_max;      // highest step of the window: the live overlap
    register<bit<8>>(MAX_JOBS) alpha_m1;      // alpha - 1: an all-zero slot is a new job
    register<bit<32>>(MAX_JOBS) cnt_total;
    register<bit<32>>(MAX_JOBS) cnt_op;
    register<bit<32>>(MAX_JOBS) win_start;
    counter(MAX_JOBS, CounterType.packets) packets;

    apply {
        bit<32> job = (bit<32>)meta.job_id;
        step_t smin;
        psn_t rec;
        step_t smax;
        bit<8> am1;
        bit<32> total;
        bit<32> op;
        bit<32> start;
        step_min.read(smin, job);
        psn_rec.read(rec, job);
        step_max.read(smax, job);
        alpha_m1.read(am1, job);
        cnt_total.read(total, job);
        cnt_op.read(op, job);
        win_start.read(start, job);
        bit<8> alpha = am1 + 1;

        // 1. Window rollover (unsigned, wrap-safe). Eq. 5 without division:
        //    cnt_op >= tau * cnt_total  <=>  cnt_op * 256 >= tau_q8 * cnt_total.
        if (now - start >= meta.t_win) {
            if (total >= meta.n_sample) {
                if ((bit<48>)op * 256 >= (bit<48>)meta.tau_q8 * (bit<48>)total) {
                    alpha = alpha >= meta.alpha_max ? meta.alpha_max : alpha + 1;
                } else if (alpha > 1) {
                    alpha = alpha - 1;
                }
            }
            total = 0;
            op = 0;
            rec = 0;
            start = now;
        }

        // 2. Traffic stats, against step_min before this packet's own update. Steps compare as
        //    serial numbers: d in 1..2^15-1 is later, 2^15..2^16-1 is earlier.
        //    The window's first packet (total still 0: a new job or a window just closed) sets
        //    step_max, so it resets with the window; later ones raise it (serially).
        step_t d = meta.step - smin;
        step_t dmax = meta.step - smax;
        if (total == 0 || (dmax != 0 && dmax[15:15] == 0)) {
            smax = meta.step;
        }
        total = total + 1;
        if (d != 0 && d[15:15] == 0) {
            op = op + 1;
        }

        // 3. Progress (Algorithm 1, lines 3-10): assignments, so duplicates are idempotent.
        if (meta.is_last) {
            smin = meta.step + 1;
            rec = 0;
        } else if (d[15:15] == 1) {
            smin = meta.step;
            rec = meta.p;                       // 0 when p is unknown (psn.p4)
        } else if (d == 0 && meta.p_known) {
            rec = meta.p > rec ? meta.p : rec;
        }

        step_min.write(job, smin);
        psn_rec.write(job, rec);
        step_max.write(job, smax);
        alpha_m1.write(job, alpha - 1);
        cnt_total.write(job, total);
        cnt_op.write(job, op);
        win_start.write(job, start);
        packets.count(job);

        meta.step_min = smin;
        meta.psn_rec = rec;
        meta.alpha = alpha;
    }
}
