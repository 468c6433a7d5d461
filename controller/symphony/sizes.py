"""Sizes, limits and target constants: the one Python place for each.

Where the P4 program fixes a size, the number here repeats p4src/shared/sizes.p4 and
tests/test_p4info_names.py checks it against the compiled P4Info (a register's size is in it).
"""

from __future__ import annotations

import re

# Per-job register slots (index = Job_ID; 0 = untracked): p4src/shared/sizes.p4 MAX_JOBS.
MAX_JOBS = 16384
# The largest Job_ID a 13-bit BTH tag can carry.
TAG_MAX = (1 << 13) - 1
# Hashed per-flow PSN base slots on bmv2 (p4src/shared/sizes.p4 FLOW_SLOTS).
FLOW_SLOTS = 65536
# Queue depths are 19-bit fields on both targets (deq_qdepth).
QUEUE_DEPTH_LIMIT = 1 << 19
# ECMP (docs/design.md "ECMP"): a group spreads over 2^ECMP_BUCKET_BITS buckets, the low bits of the
# 5-tuple's CRC-32 (model/ecmp.py); p4src/shared/sizes.p4 ECMP_BUCKET_BITS and
# ECMP_MEMBER_TABLE_SIZE (the member table holds every group's buckets, so a switch has at most
# ECMP_MEMBER_TABLE_SIZE // ECMP_BUCKETS groups). Group ids are 16 bits; 0 is never a group.
ECMP_BUCKET_BITS = 4
ECMP_BUCKETS = 1 << ECMP_BUCKET_BITS
ECMP_MEMBER_TABLE_SIZE = 4096
ECMP_GROUPS_MAX = ECMP_MEMBER_TABLE_SIZE // ECMP_BUCKETS
ECMP_GROUP_ID_MAX = (1 << 16) - 1
# bmv2 v1model ports are 9 bits; 511 is the drop port, so real ports are 0..510.
PORT_MAX = 510
# forward.ipv4_lpm entries (p4src/shared/sizes.p4 ROUTE_TABLE_SIZE): a topology's routes (one per
# host) and a switch's explicit routes must fit.
ROUTE_TABLE_SIZE = 1024
# Cells of the per-port frame counters, one per 9-bit port number (p4src/shared/sizes.p4
# PORT_SLOTS).
PORT_SLOTS = 512

# The ACK class (docs/ack_priority.md): ack_class entries (p4src/shared/sizes.p4
# ACK_CLASS_TABLE_SIZE), and the egress queue each target puts the class in, repeating the P4
# constant (p4src/*/include/ack_priority.p4). bmv2: standard_metadata.priority, which exists only
# when simple_switch runs with --priority-queues above it (bmv2 drops a frame whose priority is
# out of range); data keeps priority 0. Tofino2: the queue id; data keeps queue 0.
ACK_CLASS_TABLE_SIZE = 16
BMV2_ACK_PRIORITY = 1
BMV2_PRIORITY_QUEUES_MIN = BMV2_ACK_PRIORITY + 1
BMV2_PRIORITY_QUEUES_MAX = 8  # standard_metadata.priority has 3 bits
TOFINO2_ACK_QID = 1

TARGETS = ("bmv2", "tofino2")
# Ingress timestamp unit per target (docs/design.md "Timestamps"): T_win is written in ticks.
# bmv2 counts microseconds; p4src/t2na windows run on global_tstamp >> 10 (1.024 us,
# docs/tofino.md).
TICK_NS = {"bmv2": 1000, "tofino2": 1024}
BMV2_TICK_NS = TICK_NS["bmv2"]

# P4Runtime updates per WriteRequest: far below gRPC's 4 MiB message limit, few round trips.
WRITE_BATCH = 500

# Switch, job and program names: letters, digits, . _ -; 1-63 chars, a letter or digit first.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
