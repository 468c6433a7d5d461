// SPEC 4.5 on Tofino2: ECT packets that either marker chose leave with CE; the deparser then
// recomputes the checksum over the fixed header, so only option-less IPv4 is marked here.
control EcnMark(inout headers_t hdr, inout egress_meta_t meta) {
    apply {
        meta.ecn_changed = false;
        if (hdr.ipv4.isValid() && hdr.ipv4.ihl == 5
                && (meta.bridge.symphony_mark == 1 || meta.queue_mark)
                && (hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1)) {
            hdr.ipv4.ecn = ECN_CE;
            meta.ecn_changed = true;
        }
    }
}
