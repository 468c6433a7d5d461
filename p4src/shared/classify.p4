// SPEC 1 and 7: which job a packet belongs to, and that job's parameters. Target-neutral (no
// externs), so both targets share it and their P4Info agree.
control Classify(in ipv4_h ipv4, in udp_h udp, in bth_h bth, inout symphony_meta_t meta) {
    // Opcode classes are protocol constants, not policy: a const table, read-only at runtime.
    // Only SEND and RDMA WRITE data packets of RC and UC are step traffic (docs/design.md).
    action data(bit<1> is_first, bit<1> is_last) {
        meta.is_first = is_first == 1;
        meta.is_last = is_last == 1;
        meta.tracked = true;
    }

    action not_data() {
        meta.tracked = false;
    }

    table opcode_class {
        key = { bth.opcode: exact @name("opcode"); }
        actions = { data; not_data; }
        const default_action = not_data();
#if defined(__TARGET_TOFINO__)
        size = 32;  // the 24 data opcodes: Tofino asks for a size, v1model warns at one
#endif
        const entries = {
            0x00: data(1, 0);   0x20: data(1, 0);    // SEND FIRST
            0x01: data(0, 0);  0x21: data(0, 0);   // SEND MIDDLE
            0x02: data(0, 1);   0x22: data(0, 1);    // SEND LAST
            0x03: data(0, 1);   0x23: data(0, 1);    // SEND LAST with immediate
            0x04: data(1, 1);    0x24: data(1, 1);     // SEND ONLY
            0x05: data(1, 1);    0x25: data(1, 1);     // SEND ONLY with immediate
            0x06: data(1, 0);   0x26: data(1, 0);    // RDMA WRITE FIRST
            0x07: data(0, 0);  0x27: data(0, 0);   // RDMA WRITE MIDDLE
            0x08: data(0, 1);   0x28: data(0, 1);    // RDMA WRITE LAST
            0x09: data(0, 1);   0x29: data(0, 1);    // RDMA WRITE LAST with imm.
            0x0A: data(1, 1);    0x2A: data(1, 1);     // RDMA WRITE ONLY
            0x0B: data(1, 1);    0x2B: data(1, 1);     // RDMA WRITE ONLY with imm.
        }
    }

    action set_job(job_id_t job_id) {
        meta.job_id = job_id;
    }

    action untracked() {
        meta.job_id = 0;
    }

    table job_by_tag {
        key = { meta.tag: exact @name("tag"); }
        // A miss writes nothing: the source lookup that follows it then writes the Job_ID alone,
        // so a pipelined target can place both lookups in one stage.
        actions = { set_job; @defaultonly NoAction; }
        default_action = NoAction();
        size = TAG_TABLE_SIZE;
    }

    table job_by_src {
        key = { ipv4.src_addr: exact @name("src_addr"); }
        actions = { set_job; @defaultonly untracked; }
        default_action = untracked();
        size = HOST_TABLE_SIZE;
    }

    action set_params(bit<1> mark_enable, log_t k_log, bit<16> tau_q8, bit<32> t_win,
                      psn_t n_warmup, bit<32> n_sample, bit<8> alpha_max, bit<1> psn_absolute,
                      qdepth_t sym_gate) {
        meta.mark_enable = mark_enable;
        meta.k_log = k_log;
        meta.tau_q8 = tau_q8;
        meta.t_win = t_win;
        meta.n_warmup = n_warmup;
        meta.n_sample = n_sample;
        meta.alpha_max = alpha_max;
        meta.psn_absolute = psn_absolute;
        meta.sym_gate = sym_gate;
#if defined(__TARGET_TOFINO__)
        meta.win_offset = t_win - meta.now;
#endif
    }

    // A job with classification entries but no parameters is a controller bug: fail safe by
    // leaving its packets untracked.
    table job_params {
        key = { meta.job_id: exact @name("job_id"); }
        actions = { set_params; @defaultonly untracked; }
        default_action = untracked();
        size = MAX_JOBS;
    }

    apply {
        meta.step = udp.src_port;
        if (bth.tver == 0) {
            opcode_class.apply();
        }
#if defined(__TARGET_TOFINO__)
        // The opcode and the job lookups are independent, and the source lookup depends on the
        // tag lookup only through its miss (a control dependency, not a data one), so a
        // pipelined target runs all three side by side; only the parameters wait for the Job_ID.
        // The Job_ID starts at 0 (metadata is zeroed), and a packet is tracked only when its
        // opcode is step traffic and it has a Job_ID: job_params' miss clears the Job_ID, and
        // the callers test both (symphony_lib.p4), which saves a stage over clearing `tracked`
        // here. Tag 0 never has an entry (Job_IDs start at 1), so an untagged packet misses too,
        // and the parameters are looked up for every packet with a Job_ID, tracked opcode or
        // not: the lookup then waits only for the Job_ID.
        if (!job_by_tag.apply().hit) {
            job_by_src.apply();
        }
        if (meta.job_id != 0) {
            job_params.apply();
        }
#else
        // v1model runs one lookup after the other and pays for each, so it makes only those
        // whose result is used: none for an opcode that is not step traffic, no tag lookup for
        // an untagged packet. The outcome is Tofino's, and `tracked` is final here: a packet
        // without a Job_ID, or whose job has no parameters, is not tracked.
        if (meta.tracked) {
            if (meta.tag == 0) {
                job_by_src.apply();
            } else if (!job_by_tag.apply().hit) {
                job_by_src.apply();
            }
            if (meta.job_id == 0) {
                meta.tracked = false;
            } else if (!job_params.apply().hit) {
                meta.tracked = false;
            }
        }
#endif
    }
}
