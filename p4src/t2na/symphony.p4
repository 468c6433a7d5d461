// Symphony for Tofino2 (t2na): a thin program around the library (include/symphony_lib.p4),
// with the same plain forwarding as on v1model, so both targets have the same P4Info tables and
// one controller code path drives both.
#include <core.p4>
#include <t2na.p4>

#include "include/symphony_lib.p4"
#include "include/forward.p4"
#include "include/ack_priority.p4"

struct ingress_meta_t {
    symphony_ingress_t symphony;
    symphony_bridge_h  bridge;
    ecmp_ports_t       ecmp_ports;  // the parser fills them, Forward's hash reads them
}

struct egress_meta_t {
    symphony_bridge_h  bridge;
    symphony_egress_t  symphony;
}

#include "include/parser.p4"
#include "include/deparser.p4"
#include "include/port_counters.p4"

control SymphonyIngress(inout headers_t hdr,
                        inout ingress_meta_t meta,
                        in ingress_intrinsic_metadata_t ig_intr_md,
                        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Forward() forward;
    SymphonyTracker() symphony;
    PortCountersIn() ports;
    AckPriority() ack_priority;

    apply {
        forward.apply(hdr, meta.ecmp_ports, ig_intr_md, ig_dprsr_md, ig_tm_md);
        // The egress queue: ACKs and CNPs to theirs when the controller turned the class on.
        ack_priority.apply(hdr.bth, ig_tm_md);
        symphony.apply(hdr.ipv4, hdr.udp, hdr.bth, meta.symphony, meta.bridge,
                       ig_prsr_md.global_tstamp, ig_prsr_md.parser_err, ig_dprsr_md.drop_ctl);
        ports.apply(ig_intr_md, ig_dprsr_md, ig_tm_md);
    }
}

control SymphonyEgress(inout headers_t hdr,
                       inout egress_meta_t meta,
                       in egress_intrinsic_metadata_t eg_intr_md,
                       in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                       inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                       inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    SymphonyMarker() symphony;
    PortCountersOut() ports;

    apply {
        symphony.apply(hdr.ipv4, meta.bridge, meta.symphony, eg_intr_md);
        ports.apply(eg_intr_md);
    }
}

Pipeline(SymphonyIngressParser(),
         SymphonyIngress(),
         SymphonyIngressDeparser(),
         SymphonyEgressParser(),
         SymphonyEgress(),
         SymphonyEgressDeparser()) pipe;

Switch(pipe) main;
