// Plain forwarding: IPv4 by longest prefix, anything else by ingress port (a cross-connect),
// so traffic Symphony does not parse still crosses the switch unchanged.
control Forward(in headers_t hdr, inout standard_metadata_t standard_metadata) {
    action set_egress_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_egress_port; drop; }
        default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

    table port_map {
        key = { standard_metadata.ingress_port: exact @name("ingress_port"); }
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
