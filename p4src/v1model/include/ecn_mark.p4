// SPEC 4.5: an ECN-capable packet that either marker chose leaves with CE. Non-ECT packets are
// never changed and CE stays CE. The checksum is patched incrementally (RFC 1624, eq. 3) over
// the one 16-bit word that changes, so it stays right with IPv4 options and a packet that came
// with a bad checksum still has one.
control EcnMark(inout ipv4_h ipv4, in symphony_meta_t meta, in qdepth_t enq_qdepth) {
    apply {
        // The backlog gate: a Symphony mark leaves only from a queue of at least sym_gate.
        bool symphony_ce = meta.symphony_mark && enq_qdepth >= meta.sym_gate;
        if (ipv4.isValid() && (symphony_ce || meta.queue_mark)
                && (ipv4.ecn == ECN_ECT0 || ipv4.ecn == ECN_ECT1)) {
            bit<16> old_word = ipv4.version ++ ipv4.ihl ++ ipv4.dscp ++ ipv4.ecn;
            ipv4.ecn = ECN_CE;
            bit<16> new_word = ipv4.version ++ ipv4.ihl ++ ipv4.dscp ++ ipv4.ecn;
            bit<32> sum = (bit<32>)(~ipv4.hdr_checksum) + (bit<32>)(~old_word)
                          + (bit<32>)new_word;
            sum = (sum & 0xFFFF) + (sum >> 16);
            sum = (sum & 0xFFFF) + (sum >> 16);
            ipv4.hdr_checksum = ~sum[15:0];
        }
    }
}
