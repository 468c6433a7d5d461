// SPEC 1: Symphony's part of the parse graph, after UDP destination port 4791: the BTH, the job
// tag it carries, and the RETH of the RDMA WRITE opcodes that have one. A sub-parser, so that
// every program embedding Symphony (our tops, fabric_demo.p4, an operator's) parses it the same
// way; architecture-neutral (no externs).
#ifndef SYMPHONY_ROCE_PARSER_P4
#define SYMPHONY_ROCE_PARSER_P4

parser SymphonyRoceParser(packet_in pkt, out bth_h bth, out reth_h reth,
                          inout symphony_meta_t meta) {
    state start {
        pkt.extract(bth);
        // The 13-bit tag sits in two reserved fields; joined here, where it is free, rather than
        // in the pipeline, where joining them would take a stage before the tag lookup.
        meta.tag = bth.resv6 ++ bth.resv7;
        transition select(bth.opcode) {
            RC_RDMA_WRITE_FIRST: parse_reth;
            RC_RDMA_WRITE_ONLY: parse_reth;
            RC_RDMA_WRITE_ONLY_IMM: parse_reth;
            UC_RDMA_WRITE_FIRST: parse_reth;
            UC_RDMA_WRITE_ONLY: parse_reth;
            UC_RDMA_WRITE_ONLY_IMM: parse_reth;
            default: accept;
        }
    }

    state parse_reth {
        pkt.extract(reth);
        transition accept;
    }
}

#endif
