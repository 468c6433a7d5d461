// Plain forwarding, as on v1model: IPv4 by longest prefix, anything else by ingress port. A route
// leaves on one port or on an ECMP group, whose member is chosen by a hash of the 5-tuple
// (docs/design.md "ECMP"; the same hash as v1model/include/forward.p4 and
// controller/symphony/model/ecmp.py).
#ifndef SYMPHONY_T2NA_FORWARD_P4
#define SYMPHONY_T2NA_FORWARD_P4

// The UDP ports the ECMP hash reads, 0 without a UDP header. The program's parser copies them
// there (free in the parser): Tofino hashes PHV fields as they are, and an invalid header's
// fields need not be 0 (their containers can be shared with other fields).
struct ecmp_ports_t {
    bit<16> sport;
    bit<16> dport;
}

control Forward(in headers_t hdr,
                in ecmp_ports_t ports,
                in ingress_intrinsic_metadata_t ig_intr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    // The standard CRC-32 (reflected, init and final xor all ones: context.json's "crc_32").
    Hash<bit<32>>(HashAlgorithm_t.CRC32) ecmp_hash;
    // Read only after set_ecmp_group wrote them; the zeros keep the compiler's uninitialized-use
    // check quiet and cost no stage (metadata starts at 0 on Tofino; docs/tofino.md).
    bit<16> ecmp_group = 0;
    bit<ECMP_BUCKET_BITS> ecmp_bucket = 0;

    action set_egress_port(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }

    // The hash runs in the route's action, so it takes no stage of its own and the member table
    // sits in the stage after the route (a hash in a separate statement cost one more stage).
    action set_ecmp_group(bit<16> group) {
        ecmp_group = group;
        ecmp_bucket = ecmp_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                                      ports.sport, ports.dport })[ECMP_BUCKET_BITS - 1:0];
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_egress_port; set_ecmp_group; drop; }
        default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

    // One entry per bucket of every group, as on v1model: Tofino has no modulo to spread a hash
    // over a group's n members, and an action selector picks members its own way, which neither
    // bmv2 nor the Python model reproduces (docs/design.md "ECMP").
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
        key = { ig_intr_md.ingress_port: exact @name("ingress_port"); }
        actions = { set_egress_port; drop; }
        default_action = drop();
        size = PORT_TABLE_SIZE;
    }

    apply {
        if (hdr.ipv4.isValid()) {
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

#endif
