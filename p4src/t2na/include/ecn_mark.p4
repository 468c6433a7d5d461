// SPEC 4.5 on Tofino2: ECT packets that either marker chose leave with CE; the deparser then
// recomputes the checksum over the fixed header, so only option-less IPv4 is marked here.
control EcnMark(inout ipv4_h ipv4, in symphony_bridge_h bridge, inout symphony_egress_t meta) {
    apply {
        meta.ecn_changed = false;
        if (ipv4.isValid() && ipv4.ihl == 5
                && (bridge.symphony_mark == 1 || meta.queue_mark)
                && (ipv4.ecn == ECN_ECT0 || ipv4.ecn == ECN_ECT1)) {
            ipv4.ecn = ECN_CE;
            meta.ecn_changed = true;
        }
    }
}
