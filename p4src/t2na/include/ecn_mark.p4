// SPEC 4.5 on Tofino2: ECT packets that either marker chose leave with CE; the deparser then
// recomputes the checksum over the fixed header, so only option-less IPv4 is marked here.
control EcnMark(inout ipv4_h ipv4, in symphony_bridge_h bridge, inout symphony_egress_t meta,
                in qdepth_t enq_qdepth) {
    // The backlog gate as a saturating difference of whole 16-bit containers, in an action of
    // its own: a gateway compares only with constants.
    action measure_gate() {
        meta.short_by = bridge.sym_gate |-| meta.depth16;
    }

    @hidden table gate_shortfall {
        actions = { measure_gate; }
        default_action = measure_gate();
        size = 1;
    }

    apply {
        meta.ecn_changed = false;
        // Deeper than 16 bits count as the deepest (gate_depth is below 2^16).
        if (enq_qdepth[18:16] != 0) {
            meta.depth16 = 0xFFFF;
        } else {
            meta.depth16 = enq_qdepth[15:0];
        }
        gate_shortfall.apply();
        bool symphony_ce = false;
        if (bridge.symphony_mark == 1 && meta.short_by == 0) {
            symphony_ce = true;
        }
        if (ipv4.isValid() && ipv4.ihl == 5
                && (symphony_ce || meta.queue_mark)
                && (ipv4.ecn == ECN_ECT0 || ipv4.ecn == ECN_ECT1)) {
            ipv4.ecn = ECN_CE;
            meta.ecn_changed = true;
        }
    }
}
