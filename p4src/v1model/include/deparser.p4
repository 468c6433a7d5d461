// The IPv4 checksum is patched incrementally where CE is set (ecn_mark.p4), so neither control
// recomputes it: packets Symphony does not mark leave byte for byte as they came.
control SymphonyVerifyChecksum(inout headers_t hdr, inout symphony_meta_t meta) {
    apply { }
}

control SymphonyComputeChecksum(inout headers_t hdr, inout symphony_meta_t meta) {
    apply { }
}

control SymphonyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
        pkt.emit(hdr.reth);
    }
}
