// Symphony for bmv2 (v1model): a thin program around the library (include/symphony_lib.p4),
// with plain forwarding. Each SPEC rule lives in one file under include/ or ../shared/.
#include <core.p4>
// register<T, I> and counter<I> with a 16-bit index (include/symphony_lib.p4).
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#include "include/symphony_lib.p4"
#include "include/parser.p4"
#include "include/forward.p4"
#include "include/deparser.p4"
#include "include/port_counters.p4"
#include "include/ack_priority.p4"

// v1model's mark_to_drop() sends a packet to port 511.
const bit<9> DROP_PORT = 511;

control SymphonyIngress(inout headers_t hdr,
                        inout symphony_meta_t meta,
                        inout standard_metadata_t standard_metadata) {
    Forward() forward;
    SymphonyTracker() symphony;
    PortCountersIn() ports;
    AckPriority() ack_priority;

    apply {
        forward.apply(hdr, standard_metadata);
        // The egress queue: ACKs and CNPs to theirs when the controller turned the class on.
        ack_priority.apply(hdr.bth, standard_metadata);
        symphony.apply(hdr.ipv4, hdr.udp, hdr.bth, meta,
                       standard_metadata.ingress_global_timestamp,
                       standard_metadata.parser_error == error.NoError
                           && standard_metadata.egress_spec != DROP_PORT);
        ports.apply(standard_metadata);
    }
}

control SymphonyEgress(inout headers_t hdr,
                       inout symphony_meta_t meta,
                       inout standard_metadata_t standard_metadata) {
    SymphonyMarker() symphony;
    PortCountersOut() ports;

    apply {
        symphony.apply(hdr.ipv4, meta, standard_metadata);
        ports.apply(standard_metadata);
    }
}

V1Switch(SymphonyParser(),
         SymphonyVerifyChecksum(),
         SymphonyIngress(),
         SymphonyEgress(),
         SymphonyComputeChecksum(),
         SymphonyDeparser()) main;
