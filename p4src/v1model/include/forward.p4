// Plain forwarding: IPv4 by longest prefix, anything else by ingress port (a cross-connect),
// so traffic Symphony does not parse still crosses the switch unchanged. A route leaves on one
// port or on an ECMP group, whose member is chosen by a hash of the 5-tuple (docs/design.md
// "ECMP"; the same hash as t2na/include/forward.p4 and controller/symphony/model/ecmp.py).
control Forward(in headers_t hdr, inout standard_metadata_t standard_metadata) {
    bit<16> ecmp_group = 0;
    bit<ECMP_BUCKET_BITS> ecmp_bucket = 0;
    // Without a UDP header (TCP, ICMP, IPv4 the parser does not take to UDP) the ports are 0.
    bit<16> l4_sport = 0;
    bit<16> l4_dport = 0;

    action set_egress_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    // The hash runs in the route's action, as on t2na (where that saves a stage).
    action set_ecmp_group(bit<16> group) {
        ecmp_group = group;
        // CRC-32 modulo ECMP_BUCKETS: its low ECMP_BUCKET_BITS bits.
        hash(ecmp_bucket, HashAlgorithm.crc32, (bit<ECMP_BUCKET_BITS>)0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol, l4_sport, l4_dport },
             (bit<32>)ECMP_BUCKETS);
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_egress_port; set_ecmp_group; drop; }
        default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

    // One entry per bucket of every group (the controller fills bucket b with member b % n): a
    // plain exact table rather than an action selector, so that both targets pick members the
    // same way and the Python model predicts it (docs/design.md "ECMP").
    table ecmp_member {
        key = {
            ecmp_group: exact @name("group");
            ecmp_bucket: exact @name("bucket");
        }
        actions = { set_egress_port; drop; }
        default_action = drop();
        size = ECMP_MEMBER_TABLE_SIZE;
    }

    table port_map {
        key = { standard_metadata.ingress_port: exact @name("ingress_port"); }
        actions = { set_egress_port; drop; }
        default_action = drop();
        size = PORT_TABLE_SIZE;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            if (hdr.udp.isValid()) {
                l4_sport = hdr.udp.src_port;
                l4_dport = hdr.udp.dst_port;
            }
            switch (ipv4_lpm.apply().action_run) {
                set_ecmp_group: {
                    ecmp_member.apply();
                }
            }
        } else {
            port_map.apply();
        }
    }
}
