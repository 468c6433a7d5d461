// SPEC 1: Ethernet / IPv4 / UDP 4791 / BTH / [RETH]. Everything else stops early and is
// forwarded unchanged; a packet too short for the header it announces ends with a parser error,
// which keeps it out of Symphony (ingress checks parser_error).
parser SymphonyParser(packet_in pkt,
                      out headers_t hdr,
                      inout symphony_meta_t meta,
                      inout standard_metadata_t standard_metadata) {
    SymphonyRoceParser() roce;

    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    // Only option-less, unfragmented IPv4 reaches UDP: a later fragment has no UDP header and a
    // first fragment's BTH belongs to a packet the switch cannot see whole. A version other
    // than 4 under the IPv4 EtherType is not IPv4 at all (found by the packet fuzzer).
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
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
            default: accept;
        }
    }

    state parse_bth {
        roce.apply(pkt, hdr.bth, hdr.reth, meta);
        transition accept;
    }
}
