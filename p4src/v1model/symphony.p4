// Symphony for bmv2 (v1model): the thin top. Each SPEC rule lives in one file under include/.
#include <core.p4>
#include <v1model.p4>

#include "../shared/sizes.p4"
#include "../shared/headers.p4"

#include "include/parser.p4"
#include "include/forward.p4"
#include "../shared/classify.p4"
#include "include/psn.p4"
#include "include/job_state.p4"
#include "include/throttle.p4"
#include "include/queue_mark.p4"
#include "include/ecn_mark.p4"
#include "include/deparser.p4"

// v1model's mark_to_drop() sends a packet to port 511.
const bit<9> DROP_PORT = 511;

control SymphonyIngress(inout headers_t hdr,
                        inout symphony_meta_t meta,
                        inout standard_metadata_t standard_metadata) {
    Forward() forward;
    Classify() classify;
    PsnTracker() psn;
    JobState() job_state;
    Throttle() throttle;

    apply {
        forward.apply(hdr, standard_metadata);
        // Malformed RoCE (a parser error) and everything but a BTH stays untracked, and so does
        // a packet the forwarding rules drop: it never reaches a queue (the paper examines
        // dequeued packets).
        if (standard_metadata.parser_error == error.NoError && hdr.bth.isValid()
                && standard_metadata.egress_spec != DROP_PORT) {
            classify.apply(hdr, meta);
        }
        if (meta.tracked) {
            psn.apply(hdr, meta);
            // bmv2 timestamps are in microseconds; windows use their low 32 bits.
            job_state.apply(meta, standard_metadata.ingress_global_timestamp[31:0]);
            throttle.apply(meta);
        }
    }
}

control SymphonyEgress(inout headers_t hdr,
                       inout symphony_meta_t meta,
                       inout standard_metadata_t standard_metadata) {
    QueueMark() queue_mark;
    EcnMark() ecn_mark;

    apply {
        queue_mark.apply(hdr, meta, standard_metadata);
        ecn_mark.apply(hdr, meta);
    }
}

V1Switch(SymphonyParser(),
         SymphonyVerifyChecksum(),
         SymphonyIngress(),
         SymphonyEgress(),
         SymphonyComputeChecksum(),
         SymphonyDeparser()) main;
