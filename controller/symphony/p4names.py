"""Every P4Info name the Python code uses: the one place they are typed.

The P4 program (p4src/) declares them; these constants repeat them for Python. Nothing here is
trusted: tests/test_p4info_names.py checks every name below against the compiled P4Info of both
targets (bmv2 in the normal test run, Tofino2 in the test command's Tofino2 group), and that every
table entry the controller builds encodes against them. A name changed in P4 and not here fails
that test, not a switch at run time.
"""

from __future__ import annotations

INGRESS = "SymphonyIngress"
EGRESS = "SymphonyEgress"
_FORWARD = f"{INGRESS}.forward"
_CLASSIFY = f"{INGRESS}.classify"
_JOB_STATE = f"{INGRESS}.job_state"
_THROTTLE = f"{INGRESS}.throttle"
_QUEUE_MARK = f"{EGRESS}.queue_mark"
_ACK_PRIORITY = f"{INGRESS}.ack_priority"

# Tables and their actions ------------------------------------------------------------------
IPV4_LPM = f"{_FORWARD}.ipv4_lpm"
PORT_MAP = f"{_FORWARD}.port_map"
SET_EGRESS_PORT = f"{_FORWARD}.set_egress_port"
# ECMP (docs/design.md "ECMP"): a route's set_ecmp_group(group), then ecmp_member's entry for
# (group, bucket) -> set_egress_port; model/ecmp.py is the hash.
SET_ECMP_GROUP = f"{_FORWARD}.set_ecmp_group"
ECMP_MEMBER = f"{_FORWARD}.ecmp_member"

JOB_BY_TAG = f"{_CLASSIFY}.job_by_tag"
JOB_BY_SRC = f"{_CLASSIFY}.job_by_src"
JOB_PARAMS = f"{_CLASSIFY}.job_params"
# A const-entry table of the program: the controller only reads it (tests check it is there).
OPCODE_CLASS = f"{_CLASSIFY}.opcode_class"
SET_JOB = f"{_CLASSIFY}.set_job"
# Action data: model.params.JobParams.to_action_params (tests check the names match).
SET_PARAMS = f"{_CLASSIFY}.set_params"

LOG_P = f"{_THROTTLE}.log_p"
LOG_PSN_REC = f"{_THROTTLE}.log_psn_rec"
LOG_ALPHA = f"{_THROTTLE}.log_alpha"
PROB_THRESHOLD = f"{_THROTTLE}.prob_threshold"
SET_LOG_P = f"{_THROTTLE}.set_log_p"
SET_LOG_PSN_REC = f"{_THROTTLE}.set_log_psn_rec"
SET_LOG_ALPHA = f"{_THROTTLE}.set_log_alpha"
SET_THRESHOLD = f"{_THROTTLE}.set_threshold"

QUEUE_THRESHOLD = f"{_QUEUE_MARK}.queue_threshold"
SET_QUEUE_THRESHOLD = f"{_QUEUE_MARK}.set_threshold"

# The ACK class (docs/ack_priority.md): opcode -> the priority egress queue; filled only on a
# switch whose config has ack_priority = true (desired.ack_class_entries).
ACK_CLASS = f"{_ACK_PRIORITY}.ack_class"
TO_ACK_QUEUE = f"{_ACK_PRIORITY}.to_ack_queue"

TABLES = (
    IPV4_LPM,
    ECMP_MEMBER,
    PORT_MAP,
    OPCODE_CLASS,
    JOB_BY_TAG,
    JOB_BY_SRC,
    JOB_PARAMS,
    LOG_P,
    LOG_PSN_REC,
    LOG_ALPHA,
    PROB_THRESHOLD,
    QUEUE_THRESHOLD,
    ACK_CLASS,
)
ACTIONS = (
    SET_EGRESS_PORT,
    SET_ECMP_GROUP,
    SET_JOB,
    SET_PARAMS,
    SET_LOG_P,
    SET_LOG_PSN_REC,
    SET_LOG_ALPHA,
    SET_THRESHOLD,
    SET_QUEUE_THRESHOLD,
    TO_ACK_QUEUE,
)

# Registers and counters ----------------------------------------------------------------------
# Per-job state field of the golden model (model.switch_model.JobState) -> register array on the
# switch (index = Job_ID). alpha is stored minus one so that an all-zero slot is a new job.
JOB_REGISTERS: dict[str, str] = {
    "step_min": f"{_JOB_STATE}.step_min",
    "psn_rec": f"{_JOB_STATE}.psn_rec",
    "step_max": f"{_JOB_STATE}.step_max",
    "alpha": f"{_JOB_STATE}.alpha",
    "window_packets": f"{_JOB_STATE}.window_packets",
    "window_ahead_packets": f"{_JOB_STATE}.window_ahead_packets",
    "win_start": f"{_JOB_STATE}.win_start",
}
# Tofino2 only: eq. 5 as a running sum (docs/tofino.md); part of a job's state to clear on release.
TOFINO_JOB_REGISTERS: dict[str, str] = {"tau_score": f"{_JOB_STATE}.tau_score"}
# Per-flow PSN bases (index = flow slot, not a job).
FLOW_BASE = f"{INGRESS}.psn.flow_base"
# Per-job packet counters (index = Job_ID).
JOB_COUNTERS: dict[str, str] = {
    "packets": f"{_JOB_STATE}.packets",
    "marks": f"{_THROTTLE}.marks",
    "queue_marks": f"{_QUEUE_MARK}.marks",
}
# Per-port frame counters (index = port number; p4src/*/include/port_counters.p4): frames that
# entered the pipeline by ingress port, frames ingress handed to each egress queue, frames that
# left each queue. Read by the experiments' loss attribution (evaluation/hosts/losses.py).
PORT_COUNTERS: dict[str, str] = {
    "received": f"{INGRESS}.ports.received",
    "enqueued": f"{INGRESS}.ports.enqueued",
    "dequeued": f"{EGRESS}.ports.dequeued",
}


def names(target: str) -> dict[str, tuple[str, ...]]:
    """P4Info kind ("tables", "actions", "registers", "counters") -> the names the Python code
    expects in that target's P4Info."""
    registers = (*JOB_REGISTERS.values(), FLOW_BASE)
    if target == "tofino2":
        registers += tuple(TOFINO_JOB_REGISTERS.values())
    return {
        "tables": TABLES,
        "actions": ACTIONS,
        "registers": registers,
        "counters": (*JOB_COUNTERS.values(), *PORT_COUNTERS.values()),
    }
