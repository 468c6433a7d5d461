"""Desired entries for jobs and the diff that reconciliation writes."""

from __future__ import annotations

import pytest
from finsy.proto import p4r

from symphony import p4names
from symphony.jobs.store import Job
from symphony.model.ecmp import bucket_members
from symphony.model.params import JobParams
from symphony.sizes import ECMP_BUCKETS, ECMP_GROUP_ID_MAX
from symphony.switch import desired, entries


def te(table_id, value: bytes, action_id=1, param=b"\x01", default=False, priority=0):
    e = p4r.TableEntry(table_id=table_id, priority=priority, is_default_action=default)
    if not default:
        e.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=value))
    e.action.action.action_id = action_id
    e.action.action.params.add(param_id=1, value=param)
    return e


def test_diff_deletes_modifies_inserts():
    a, b, c = te(1, b"\x01"), te(1, b"\x02"), te(1, b"\x03")
    b2 = te(1, b"\x02", param=b"\x07")
    actual = entries.index([a, b])
    want = entries.index([b2, c])
    d = entries.diff(actual, want)
    assert d.delete == [a] and d.modify == [b2] and d.insert == [c]
    assert len(d) == 3


def test_diff_of_equal_states_is_empty():
    a, b = te(1, b"\x01"), te(2, b"\x01")
    assert not entries.diff(entries.index([a, b]), entries.index([te(2, b"\x01"), te(1, b"\x01")]))


def test_diff_defaults_are_modified_never_deleted():
    dflt = te(3, b"", default=True, action_id=9)
    want_dflt = te(3, b"", default=True, action_id=8)
    d = entries.diff(entries.index([dflt]), entries.index([want_dflt]))
    assert d.modify == [want_dflt] and not d.delete and not d.insert
    d = entries.diff(entries.index([dflt]), {})
    assert not d


def test_key_ignores_match_order_but_not_priority():
    e1 = p4r.TableEntry(table_id=1, priority=5)
    e1.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=b"\x01"))
    e1.match.add(field_id=2, exact=p4r.FieldMatch.Exact(value=b"\x02"))
    e2 = p4r.TableEntry(table_id=1, priority=5)
    e2.match.add(field_id=2, exact=p4r.FieldMatch.Exact(value=b"\x02"))
    e2.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=b"\x01"))
    assert entries.key_of(e1) == entries.key_of(e2)
    e2.priority = 6
    assert entries.key_of(e1) != entries.key_of(e2)


def test_strip_for_compare_drops_read_only_fields():
    e = te(1, b"\x01")
    e.counter_data.packet_count = 5
    e.metadata = b"x"
    s = entries.strip_for_compare(e)
    assert not s.HasField("counter_data") and s.metadata == b""
    assert entries.key_of(s) == entries.key_of(e) and entries.action_of(s) == entries.action_of(e)


def job(mode, hosts=(), job_id=42):
    return Job(
        uid=1,
        job_id=job_id,
        request_key="k",
        name="n",
        mode=mode,
        hosts=tuple(hosts),
        switches=("s1",),
        params={},
        state="active",
        pending=(),
        created_at=0.0,
        released_at=None,
    )


def test_tag_job_entries():
    params = JobParams().to_action_params(1000)
    specs = desired.job_entries(job("tag"), params)
    assert [s.table for s in specs] == [p4names.JOB_PARAMS, p4names.JOB_BY_TAG]
    assert specs[0].match == {"job_id": 42} and specs[0].params == params
    assert specs[1].match == {"tag": 42} and specs[1].params == {"job_id": 42}
    assert specs[1].action == p4names.SET_JOB


def test_hosts_job_entries_one_per_address():
    specs = desired.job_entries(
        job("hosts", ["10.0.0.1", "192.168.1.2"], 9000), JobParams().to_action_params(1000)
    )
    srcs = [s for s in specs if s.table == p4names.JOB_BY_SRC]
    assert [s.match["src_addr"] for s in srcs] == [0x0A000001, 0xC0A80102]
    assert all(s.params == {"job_id": 9000} for s in srcs)
    # The parameters entry comes first so that a classified packet always finds it.
    assert specs[0].table == p4names.JOB_PARAMS


def test_base_entries_cover_routes_ports_and_luts(tmp_path):
    from test_config_load import write_example

    from symphony import config

    cfg = config.load(write_example(tmp_path))
    base = desired.base_entries(cfg.switch("s1"))
    routes = [s for s in base if s.table == p4names.IPV4_LPM]
    # examples/bmv2.toml: 10.0.i.0/24 -> port i, ports 0-3, non-IPv4 crossing 0 <-> 1.
    assert [(r.match["dst_addr"], r.params["port"]) for r in routes] == [
        ((0x0A000000 | i << 8, 24), i) for i in range(4)
    ]
    port_map = {
        s.match["ingress_port"]: s.params["port"] for s in base if s.table == p4names.PORT_MAP
    }
    assert port_map == {0: 1, 1: 0}
    qm_ports = {s.match["egress_port"] for s in base if s.table == p4names.QUEUE_THRESHOLD}
    assert qm_ports == {0, 1, 2, 3}
    assert len([s for s in base if s.table == p4names.PROB_THRESHOLD]) > 1000


def test_ecmp_group_entries_fill_every_bucket_with_its_member():
    """desired.ecmp_group_entries: ECMP_BUCKETS member entries, bucket b -> sorted(members)[b % n];
    desired.ecmp_route: the route's set_ecmp_group(group)."""
    specs = desired.ecmp_group_entries(4, (9, 2, 5))
    assert len(specs) == ECMP_BUCKETS
    assert {s.table for s in specs} == {p4names.ECMP_MEMBER}
    assert {s.action for s in specs} == {p4names.SET_EGRESS_PORT}
    by_bucket = {s.match["bucket"]: s for s in specs}
    assert sorted(by_bucket) == list(range(ECMP_BUCKETS))
    for b, s in by_bucket.items():
        assert s.match["group"] == 4
        assert s.params == {"port": bucket_members((9, 2, 5))[b]} == {"port": (2, 5, 9)[b % 3]}
    r = desired.ecmp_route(0x0A010000, 16, 4)
    assert (r.table, r.action) == (p4names.IPV4_LPM, p4names.SET_ECMP_GROUP)
    assert r.match == {"dst_addr": (0x0A010000, 16)} and r.params == {"group": 4}


@pytest.mark.parametrize("group", [0, ECMP_GROUP_ID_MAX + 1])
def test_ecmp_group_ids_outside_the_field_are_refused(group):
    with pytest.raises(ValueError, match="ecmp group"):
        desired.ecmp_group_entries(group, (1, 2))
    with pytest.raises(ValueError, match="ecmp group"):
        desired.ecmp_route(0x0A010000, 16, group)
