// SPEC 2: a packet's position inside its step, p = (psn - base) mod 2^24, where base is the PSN
// of its flow's FIRST/ONLY packet of this step. One hashed slot per flow (IPv4 source + BTH
// destination QP) holds sig:16 | step:16 | base:24. A slot whose signature or step differs
// (hash collision, or the FIRST was never seen) leaves p unknown, which on v1model is p = 0
// (every use of p treats 0 and unknown alike: job_state.p4, throttle.p4).
control PsnTracker(in ipv4_h ipv4, in bth_h bth, inout symphony_meta_t meta) {
    register<bit<64>, bit<32>>(FLOW_SLOTS) flow_base;

    bit<32> slot;
    bit<16> sig;

    @hidden action locate() {
        hash(slot, HashAlgorithm.crc32, (bit<32>)0, { ipv4.src_addr, bth.dqpn },
             (bit<32>)FLOW_SLOTS);
        hash(sig, HashAlgorithm.crc16, (bit<16>)0, { ipv4.src_addr, bth.dqpn },
             (bit<32>)65536);
        // The top bit is always set so that an empty slot (all zeros) never matches.
        sig = sig | 0x8000;
    }

    // A FIRST/ONLY packet (re)starts its flow's slot: p = 0.
    @hidden action restart() {
        flow_base.write(slot, 8w0 ++ sig ++ meta.step ++ bth.psn);
    }

    apply {
        // p = psn - base (mod 2^24). "absolute" mode (each step starts at PSN 0, the paper's
        // testbed) has base 0, which metadata starts with, so there p needs no slot, and the
        // subtraction at the end joins the primitives bmv2 runs next (one table fewer). A
        // FIRST/ONLY packet still restarts its flow's slot in both modes. Where p is 0 (FIRST/ONLY)
        // or unknown, relative mode takes the PSN itself as the base.
        if (meta.psn_absolute == 0 || meta.is_first) {
            locate();
            if (meta.is_first) {
                restart();
                if (meta.psn_absolute == 0) {
                    meta.psn_base = bth.psn;
                }
            } else {
                bit<64> slot_value;
                flow_base.read(slot_value, slot);
                meta.psn_base = bth.psn;
                if (slot_value[55:40] == sig && slot_value[39:24] == meta.step) {
                    meta.psn_base = slot_value[23:0];
                }
            }
        }
        meta.p = bth.psn - meta.psn_base;
    }
}
