// SPEC 1 on Tofino2: the same parse graph as v1model, after the intrinsic port metadata. The
// egress parser needs only the bridge and the IPv4 header (ECN): the rest rides as payload.
parser SymphonyIngressParser(packet_in pkt,
                             out headers_t hdr,
                             out ingress_meta_t meta,
                             out ingress_intrinsic_metadata_t ig_intr_md) {
    SymphonyRoceParser() roce;

    state start {
        // Everything starts at its default (0, false, invalid), as on v1model.
        meta.symphony.s = { ... };
        meta.symphony.t = { ... };
        meta.bridge.setInvalid();
        meta.ecmp_ports = { 0, 0 };
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    // Only option-less, unfragmented IPv4 (version 4) reaches UDP (see v1model/include/parser.p4).
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.flags[0:0],
                          hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4, 5, 0, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        meta.ecmp_ports.sport = hdr.udp.src_port;
        meta.ecmp_ports.dport = hdr.udp.dst_port;
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
            default: accept;
        }
    }

    state parse_bth {
        roce.apply(pkt, hdr.bth, hdr.reth, meta.symphony.s);
        transition accept;
    }
}

parser SymphonyEgressParser(packet_in pkt,
                            out headers_t hdr,
                            out egress_meta_t meta,
                            out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        meta.symphony = { ... };
        pkt.extract(eg_intr_md);
        pkt.extract(meta.bridge);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}
