// Ingress: the bridge in front of the packet. Egress: the IPv4 checksum is recomputed only
// where CE was set (ecn_mark.p4), so packets Symphony leaves alone leave byte for byte as they
// came; Tofino's deparser checksum covers the fixed header, which is why ecn_mark.p4 marks only
// option-less IPv4 on this target (docs/tofino.md).
control SymphonyIngressDeparser(packet_out pkt,
                                inout headers_t hdr,
                                in ingress_meta_t meta,
                                in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(meta.bridge);
        pkt.emit(hdr);
    }
}

control SymphonyEgressDeparser(packet_out pkt,
                               inout headers_t hdr,
                               in egress_meta_t meta,
                               in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (meta.symphony.ecn_changed) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}
