// SPEC 2 on Tofino2: the per-flow slot {sig:16 ++ step:16, base} in one 64-bit register pair.
// The base is stored with bit 24 set, so a lookup returns a non-zero base on a match and 0 on a
// mismatch: one 32-bit return value carries both "known" and, after one subtraction in the MAU
// (a paired stateful ALU may subtract only into the register), p = psn - base mod 2^24.
struct flow_slot_t {
    bit<32> key;
    bit<32> base;
}

// The flow's slot and signature depend only on the headers: SymphonyTracker applies this before
// classification is known, so the hashes run in the first stage beside the job lookups.
control FlowHash(in ipv4_h ipv4, in udp_h udp, in bth_h bth, inout symphony_tofino_meta_t t) {
    Hash<bit<16>>(HashAlgorithm_t.CRC32) slot_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) sig_hash;

    // The hashes get a table of their own: a keyless table whose action reads a hash unit
    // cannot also carry constants (action data). The key is sig:16 ++ step:16.
    @hidden action hash_flow() {
        t.flow_slot = slot_hash.get({ ipv4.src_addr, bth.dqpn });
        t.flow_key = sig_hash.get({ ipv4.src_addr, bth.dqpn }) ++ udp.src_port;  // the step
    }

    @hidden table flow_hashes {
        actions = { hash_flow; }
        const default_action = hash_flow();
        size = 1;
    }

    apply {
        flow_hashes.apply();
        t.psn_plus = 8w1 ++ bth.psn;  // psn + 2^24: a stored base is never 0
    }
}

control PsnTracker(in bth_h bth, inout symphony_meta_t meta, inout symphony_tofino_meta_t t) {
    Register<flow_slot_t, bit<16>>(FLOW_SLOTS) flow_base;

    RegisterAction<flow_slot_t, bit<16>, bit<32>>(flow_base) flow_start = {
        void apply(inout flow_slot_t value) {
            value.key = t.flow_key;
            value.base = t.psn_plus;
        }
    };

    RegisterAction<flow_slot_t, bit<16>, bit<32>>(flow_base) flow_lookup = {
        void apply(inout flow_slot_t value, out bit<32> rv) {
            if (value.key == t.flow_key) {
                rv = value.base;
            } else {
                rv = 0;
            }
        }
    };

    // The slot is read or restarted first, whatever the mode (as on v1model: a FIRST restarts
    // its flow's slot in absolute mode too), so the stateful ALU runs as soon as the packet is
    // known to be tracked; p follows from its result in the next stage.
    apply {
        if (meta.is_first) {
            flow_start.execute(t.flow_slot);
        } else {
            // An empty slot (key and base 0) reads as a mismatch: its base is 0.
            t.flow_rv = flow_lookup.execute(t.flow_slot);
        }
        if (meta.psn_absolute == 1) {
            meta.p = bth.psn;
            meta.p_known = true;
        } else if (meta.is_first) {
            meta.p_known = true;
            meta.p = 0;
        } else {
            // A gateway, not `p_known = flow_rv != 0`: bf-p4c 9.13.4 mis-sizes that comparison
            // as a 32-bit ALU result in some PHV layouts (a compiler bug seen in fabric_demo.p4).
            meta.p_known = false;
            if (t.flow_rv != 0) {
                meta.p_known = true;
            }
            meta.p = bth.psn - t.flow_rv[23:0];
        }
    }
}
