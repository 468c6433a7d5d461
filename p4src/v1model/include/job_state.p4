// SPEC 3 and 4.1-4.3: the per-job registers and their update, in the SPEC's order.
control JobState(inout symphony_meta_t meta, in bit<32> now) {
    register<step_t>(MAX_JOBS) step_min;
    register<psn_t>(MAX_JOBS) psn_rec;
    register<bit<8>>(MAX_JOBS) alpha_m1;      // alpha - 1: an all-zero slot is a new job
    register<bit<32>>(MAX_JOBS) cnt_total;
    register<bit<32>>(MAX_JOBS) cnt_op;
    register<bit<32>>(MAX_JOBS) win_start;
    counter(MAX_JOBS, CounterType.packets) packets;

    apply {
        bit<32> job = (bit<32>)meta.job_id;
        step_t smin;
        psn_t rec;
        bit<8> am1;
        bit<32> total;
        bit<32> op;
        bit<32> start;
        step_min.read(smin, job);
        psn_rec.read(rec, job);
        alpha_m1.read(am1, job);
        cnt_total.read(total, job);
        cnt_op.read(op, job);
        win_start.read(start, job);
        bit<8> alpha = am1 + 1;

        // Straight-line code with ?: instead of if/else (the same decisions): bmv2 runs each
        // block of statements between two conditions as one table application, so the if/else
        // form cost about ten table applications per tracked packet (docs/scale.md).

        // 1. Window rollover (unsigned, wrap-safe). Eq. 5 without division:
        //    cnt_op >= tau * cnt_total  <=>  cnt_op * 256 >= tau_q8 * cnt_total.
        bool roll = now - start >= meta.t_win;
        bool judged = roll && total >= meta.n_sample;
        bool ahead = (bit<48>)op * 256 >= (bit<48>)meta.tau_q8 * (bit<48>)total;
        bit<8> raised = alpha >= meta.alpha_max ? meta.alpha_max : alpha + 1;
        bit<8> lowered = alpha > 1 ? alpha - 1 : alpha;
        alpha = judged ? (ahead ? raised : lowered) : alpha;
        total = roll ? 0 : total;
        op = roll ? 0 : op;
        rec = roll ? 0 : rec;
        start = roll ? now : start;

        // 2. Traffic stats, against step_min before this packet's own update. Steps compare as
        //    serial numbers: d in 1..2^15-1 is later, 2^15..2^16-1 is earlier.
        step_t d = meta.step - smin;
        bool later = d != 0 && d[15:15] == 0;
        bool earlier = d[15:15] == 1;
        total = total + 1;
        op = later ? op + 1 : op;

        // 3. Progress (Algorithm 1, lines 3-10): assignments, so duplicates are idempotent.
        //    p is 0 when unknown (psn.p4).
        psn_t same_step_rec = d == 0 && meta.p_known && meta.p > rec ? meta.p : rec;
        rec = meta.is_last ? 0 : (earlier ? meta.p : same_step_rec);
        smin = meta.is_last ? meta.step + 1 : (earlier ? meta.step : smin);

        step_min.write(job, smin);
        psn_rec.write(job, rec);
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
