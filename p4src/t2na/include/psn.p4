// SPEC 2 on Tofino2: the per-flow slot {sig:16 ++ step:16, base} in one 64-bit register pair.
// A lookup returns psn + 2^24 - base on a match (never 0) and 0 on a mismatch, so one 32-bit
// return value carries both p and "known".
struct flow_slot_t {
    bit<32> key;
    bit<32> base;
}

control PsnTracker(in headers_t hdr, inout symphony_meta_t meta, inout tofino_meta_t t) {
    Hash<bit<16>>(HashAlgorithm_t.CRC32) slot_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) sig_hash;
    Register<flow_slot_t, bit<16>>(FLOW_SLOTS) flow_base;

    RegisterAction<flow_slot_t, bit<16>, bit<32>>(flow_base) flow_start = {
        void apply(inout flow_slot_t value) {
            value.key = t.flow_key;
            value.base = (bit<32>)hdr.bth.psn;
        }
    };

    RegisterAction<flow_slot_t, bit<16>, bit<32>>(flow_base) flow_lookup = {
        void apply(inout flow_slot_t value, out bit<32> rv) {
            if (value.key == t.flow_key) {
                rv = t.psn_plus - value.base;
            } else {
                rv = 0;
            }
        }
    };

    apply {
        t.flow_slot = slot_hash.get({ hdr.ipv4.src_addr, hdr.bth.dqpn });
        bit<16> sig = sig_hash.get({ hdr.ipv4.src_addr, hdr.bth.dqpn });
        t.flow_key = (sig | 0x8000) ++ meta.step;
        t.psn_plus = (bit<32>)hdr.bth.psn + 0x1000000;
        if (meta.is_first) {
            flow_start.execute(t.flow_slot);
            meta.p_known = true;
            meta.p = 0;
        } else {
            t.flow_rv = flow_lookup.execute(t.flow_slot);
            meta.p_known = t.flow_rv != 0;
            meta.p = t.flow_rv[23:0];
        }
        if (meta.psn_absolute == 1) {
            meta.p = hdr.bth.psn;
            meta.p_known = true;
        }
    }
}
