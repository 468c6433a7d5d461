// Symphony for Tofino2 (t2na): the thin top. The controls have the same names as on v1model
// (../v1model/include), so tables, actions and counters keep their P4Info names.
#include <core.p4>
#include <t2na.p4>

#include "../shared/sizes.p4"
#include "../shared/headers.p4"
#include "include/types.p4"

#include "include/parser.p4"
#include "include/forward.p4"
#include "../shared/classify.p4"
#include "include/psn.p4"
#include "include/job_state.p4"
#include "include/coin.p4"
#include "include/throttle.p4"
#include "include/queue_mark.p4"
#include "include/ecn_mark.p4"
#include "include/deparser.p4"

control SymphonyIngress(inout headers_t hdr,
                        inout ingress_meta_t meta,
                        in ingress_intrinsic_metadata_t ig_intr_md,
                        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Forward() forward;
    Classify() classify;
    PsnTracker() psn;
    JobState() job_state;
    Throttle() throttle;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) clock;

    apply {
        forward.apply(hdr, ig_intr_md, ig_dprsr_md, ig_tm_md);
        meta.s.tracked = false;
        meta.s.symphony_mark = false;
        meta.s.job_id = 0;
        meta.bridge.setValid();
        meta.bridge.tracked = 0;
        meta.bridge.symphony_mark = 0;
        meta.bridge._pad = 0;
        // As on v1model: parser errors, non-RoCE and dropped packets stay untracked.
        if (ig_prsr_md.parser_err == 0 && hdr.bth.isValid() && ig_dprsr_md.drop_ctl == 0) {
            classify.apply(hdr, meta.s);
        }
        if (meta.s.tracked) {
            // Tofino actions cannot test a condition: the bool becomes a bit through a gateway.
            meta.bridge.tracked = 1;
            psn.apply(hdr, meta.s, meta.t);
            // Windows run on a 1.024 us clock: bits 41..10 of the ns timestamp. An identity hash
            // picks them out of the crossbar already aligned (a shift would span two containers).
            meta.t.now = clock.get({ ig_prsr_md.global_tstamp[41:10] });
            job_state.apply(meta.s, meta.t);
            throttle.apply(meta.s, meta.t, meta.bridge);
        }
        meta.bridge.job_id = meta.s.job_id;
    }
}

control SymphonyEgress(inout headers_t hdr,
                       inout egress_meta_t meta,
                       in egress_intrinsic_metadata_t eg_intr_md,
                       in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                       inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                       inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    QueueMark() queue_mark;
    EcnMark() ecn_mark;

    apply {
        queue_mark.apply(hdr, meta, eg_intr_md);
        ecn_mark.apply(hdr, meta);
    }
}

Pipeline(SymphonyIngressParser(),
         SymphonyIngress(),
         SymphonyIngressDeparser(),
         SymphonyEgressParser(),
         SymphonyEgress(),
         SymphonyEgressDeparser()) pipe;

Switch(pipe) main;
