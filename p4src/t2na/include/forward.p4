// Plain forwarding, as on v1model: IPv4 by longest prefix, anything else by ingress port.
control Forward(in headers_t hdr,
                in ingress_intrinsic_metadata_t ig_intr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action set_egress_port(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_egress_port; drop; }
        default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

    table port_map {
        key = { ig_intr_md.ingress_port: exact @name("ingress_port"); }
        actions = { set_egress_port; drop; }
        default_action = drop();
        size = PORT_TABLE_SIZE;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        } else {
            port_map.apply();
        }
    }
}
