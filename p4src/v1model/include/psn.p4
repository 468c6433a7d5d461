// SPEC 2: a packet's position inside its step, p = (psn - base) mod 2^24, where base is the PSN
// of its flow's FIRST/ONLY packet of this step. One hashed slot per flow (IPv4 source + BTH
// destination QP) holds sig:16 | step:16 | base:24. A slot whose signature or step differs
// (hash collision, or the FIRST was never seen) leaves p unknown.
control PsnTracker(in headers_t hdr, inout symphony_meta_t meta) {
    register<bit<64>>(FLOW_SLOTS) flow_base;

    apply {
        bit<32> slot;
        bit<16> sig;
        hash(slot, HashAlgorithm.crc32, (bit<32>)0, { hdr.ipv4.src_addr, hdr.bth.dqpn },
             (bit<32>)FLOW_SLOTS);
        hash(sig, HashAlgorithm.crc16, (bit<16>)0, { hdr.ipv4.src_addr, hdr.bth.dqpn },
             (bit<32>)65536);
        // The top bit is always set so that an empty slot (all zeros) never matches.
        sig = sig | 0x8000;

        // Straight-line code with ?: instead of if/else (bmv2 runs each block between two
        // conditions as a table application). A non-FIRST packet writes back the value it read.
        bit<64> slot_value;
        flow_base.read(slot_value, slot);
        bool same_flow = slot_value[55:40] == sig && slot_value[39:24] == meta.step;
        flow_base.write(slot, meta.is_first ? 8w0 ++ sig ++ meta.step ++ hdr.bth.psn : slot_value);
        psn_t p = meta.is_first ? 0 : (same_flow ? hdr.bth.psn - slot_value[23:0] : 0);
        bool p_known = meta.is_first || same_flow;
        // "absolute" mode: each step starts at PSN 0 (the paper's testbed).
        meta.p = meta.psn_absolute == 1 ? hdr.bth.psn : p;
        meta.p_known = meta.psn_absolute == 1 || p_known;
    }
}
