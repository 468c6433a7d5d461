// Symphony beside a forwarding pipeline sized like a small top-of-rack switch: L2 exact
// forwarding, IPv4 routes by longest prefix onto ECMP groups, and an ACL ternary table. It
// proves that the library (include/symphony_lib.p4) leaves room for a real program: `make
// tofino2` compiles it with the same MAX_JOBS and reports which stages each part uses
// (docs/tofino.md). It is a compile target only; the controller drives its Symphony tables
// (same P4Runtime names as symphony.p4) but not its forwarding tables.
#include <core.p4>
#include <t2na.p4>

#include "include/symphony_lib.p4"
#include "include/port_counters.p4"

#define L2_TABLE_SIZE 8192
#define ROUTE_V4_SIZE 8192
#define NEXTHOP_SIZE 1024
#define ECMP_GROUPS 256
#define ECMP_GROUP_MAX 64
#define ECMP_MEMBERS 4096
#define ACL_SIZE 1024

typedef bit<16> nexthop_id_t;

header tcp_ports_h {
    bit<16> src_port;
    bit<16> dst_port;
}

struct demo_headers_t {
    ethernet_h  ethernet;
    ipv4_h      ipv4;
    udp_h       udp;
    tcp_ports_h tcp;
    bth_h       bth;
    reth_h      reth;
}

struct demo_ingress_meta_t {
    symphony_ingress_t symphony;
    symphony_bridge_h  bridge;
    nexthop_id_t       nexthop;
    bit<16>            l4_src;
    bit<16>            l4_dst;
}

struct demo_egress_meta_t {
    symphony_bridge_h bridge;
    symphony_egress_t symphony;
}

parser DemoIngressParser(packet_in pkt, out demo_headers_t hdr, out demo_ingress_meta_t meta,
                         out ingress_intrinsic_metadata_t ig_intr_md) {
    SymphonyRoceParser() roce;

    state start {
        meta.symphony.s = { ... };
        meta.symphony.t = { ... };
        meta.bridge.setInvalid();
        meta.nexthop = 0;
        meta.l4_src = 0;
        meta.l4_dst = 0;
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.flags[0:0],
                          hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4, 5, 0, 0, IP_PROTO_UDP): parse_udp;
            (4, 5, 0, 0, 6): parse_tcp;
            default: accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        meta.l4_src = hdr.tcp.src_port;
        meta.l4_dst = hdr.tcp.dst_port;
        transition accept;
    }

    // Symphony's part of the parse graph: RoCEv2 is UDP 4791, then the BTH.
    state parse_udp {
        pkt.extract(hdr.udp);
        meta.l4_src = hdr.udp.src_port;
        meta.l4_dst = hdr.udp.dst_port;
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

control DemoIngress(inout demo_headers_t hdr, inout demo_ingress_meta_t meta,
                    in ingress_intrinsic_metadata_t ig_intr_md,
                    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    SymphonyTracker() symphony;
    // Same P4Runtime names as in symphony.p4: one loss-attribution code path for both.
    @name(".SymphonyIngress.ports") PortCountersIn() ports;

    // L2: bridged traffic by destination MAC.
    action l2_output(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }

    action l2_miss() {
        ig_dprsr_md.drop_ctl = 1;
    }

    table l2_exact {
        key = { hdr.ethernet.dst_addr: exact; }
        actions = { l2_output; @defaultonly l2_miss; }
        default_action = l2_miss();
        size = L2_TABLE_SIZE;
    }

    // L3: routes onto next hops; a next hop is one port or an ECMP group over several.
    action set_nexthop(nexthop_id_t nexthop) {
        meta.nexthop = nexthop;
    }

    action route_miss() {
        ig_dprsr_md.drop_ctl = 1;
    }

    table ipv4_routes {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { set_nexthop; @defaultonly route_miss; }
        default_action = route_miss();
        size = ROUTE_V4_SIZE;
    }

    Hash<bit<16>>(HashAlgorithm_t.CRC16) ecmp_hash;
    ActionProfile(ECMP_MEMBERS) ecmp_members;
    ActionSelector(ecmp_members, ecmp_hash, SelectorMode_t.FAIR, ECMP_GROUP_MAX,
                   ECMP_GROUPS) ecmp_selector;

    action output_routed(PortId_t port, bit<48> src_mac, bit<48> dst_mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }

    table nexthops {
        key = {
            meta.nexthop: exact;
            hdr.ipv4.src_addr: selector;
            hdr.ipv4.dst_addr: selector;
            hdr.ipv4.protocol: selector;
            meta.l4_src: selector;
            meta.l4_dst: selector;
        }
        actions = { output_routed; }
        implementation = ecmp_selector;
        size = NEXTHOP_SIZE;
    }

    // ACL: ternary on the 5-tuple and the ingress port, after forwarding, as in fabric-tna.
    action acl_permit() {
    }

    action acl_deny() {
        ig_dprsr_md.drop_ctl = 1;
    }

    action acl_redirect(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }

    table acl {
        key = {
            ig_intr_md.ingress_port: ternary;
            hdr.ipv4.src_addr: ternary;
            hdr.ipv4.dst_addr: ternary;
            hdr.ipv4.protocol: ternary;
            meta.l4_src: ternary;
            meta.l4_dst: ternary;
        }
        actions = { acl_permit; acl_deny; acl_redirect; }
        default_action = acl_permit();
        size = ACL_SIZE;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            if (ipv4_routes.apply().hit) {
                nexthops.apply();
            }
        } else {
            l2_exact.apply();
        }
        acl.apply();
        symphony.apply(hdr.ipv4, hdr.udp, hdr.bth, meta.symphony, meta.bridge,
                       ig_prsr_md.global_tstamp, ig_prsr_md.parser_err, ig_dprsr_md.drop_ctl);
        ports.apply(ig_intr_md, ig_dprsr_md, ig_tm_md);
    }
}

control DemoIngressDeparser(packet_out pkt, inout demo_headers_t hdr,
                            in demo_ingress_meta_t meta,
                            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(meta.bridge);
        pkt.emit(hdr);
    }
}

parser DemoEgressParser(packet_in pkt, out demo_headers_t hdr, out demo_egress_meta_t meta,
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

control DemoEgress(inout demo_headers_t hdr, inout demo_egress_meta_t meta,
                   in egress_intrinsic_metadata_t eg_intr_md,
                   in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                   inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                   inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    SymphonyMarker() symphony;
    @name(".SymphonyEgress.ports") PortCountersOut() ports;

    apply {
        symphony.apply(hdr.ipv4, meta.bridge, meta.symphony, eg_intr_md);
        ports.apply(eg_intr_md);
    }
}

control DemoEgressDeparser(packet_out pkt, inout demo_headers_t hdr, in demo_egress_meta_t meta,
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

Pipeline(DemoIngressParser(), DemoIngress(), DemoIngressDeparser(),
         DemoEgressParser(), DemoEgress(), DemoEgressDeparser()) pipe;

Switch(pipe) main;
