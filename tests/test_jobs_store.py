"""The persistent desired state: idempotency, conflicts, release lifecycle, parameters."""

from __future__ import annotations

import json
import sqlite3

import pytest

from symphony.jobs.errors import JobError, Kind
from symphony.jobs.store import JobStore


@pytest.fixture
def store(tmp_path):
    s = JobStore(tmp_path / "jobs.db")
    yield s
    s.close()


def test_wal_and_full_sync(store):
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_retry_same_key_same_job(store):
    a, created = store.allocate("req-1", "alpha", "tag", [], ["s1"], {"k": 0.02})
    b, created2 = store.allocate("req-1", "alpha", "tag", [], ["s1"], {"k": 0.02})
    assert created and not created2
    assert a == b


def test_same_key_different_request_refused(store):
    store.allocate("req-1", "alpha", "tag", [], ["s1"], {})
    with pytest.raises(JobError) as err:
        store.allocate("req-1", "alpha", "tag", [], ["s1", "s2"], {})
    assert err.value.kind is Kind.CONFLICT and err.value.field == "request_key"


def test_name_and_hosts_unique_among_live_jobs(store):
    store.allocate("r1", "alpha", "hosts", ["10.0.0.1", "10.0.0.2"], ["s1"], {})
    with pytest.raises(JobError, match="name"):
        store.allocate("r2", "alpha", "tag", [], ["s1"], {})
    with pytest.raises(JobError) as err:
        store.allocate("r3", "beta", "hosts", ["10.0.0.2"], ["s1"], {})
    assert err.value.field == "hosts" and "10.0.0.2" in err.value.message
    assert [j.request_key for j in store.list()] == ["r1"]


def test_release_lifecycle_frees_id_only_when_all_switches_cleared(store):
    job, _ = store.allocate("r1", "alpha", "tag", [], ["s1", "s2"], {})
    rel = store.release(job.job_id)
    assert rel.state == "releasing" and set(rel.pending) == {"s1", "s2"}
    assert store.release(job.job_id).pending == rel.pending  # idempotent
    assert store.mark_cleared(job.uid, "s1").state == "releasing"
    # Still quarantined: a new job cannot get the ID; the name can't be reused either.
    assert store.get(job.job_id) is not None
    after = store.mark_cleared(job.uid, "s2")
    assert after.state == "released" and after.released_at is not None
    assert store.get(job.job_id) is None
    # The retried allocate still answers with the (released) job: same Job_ID.
    again, created = store.allocate("r1", "alpha", "tag", [], ["s1", "s2"], {})
    assert not created and again.job_id == job.job_id and again.state == "released"
    # And the name is free again.
    store.allocate("r2", "alpha", "tag", [], ["s1"], {})


def test_release_unknown_job(store):
    with pytest.raises(JobError) as err:
        store.release(5)
    assert err.value.kind is Kind.NOT_FOUND


def test_database_refuses_duplicate_live_job_id(store):
    job, _ = store.allocate("r1", "alpha", "tag", [], ["s1"], {})
    with pytest.raises(sqlite3.IntegrityError):
        store._db.execute(
            "INSERT INTO jobs (job_id, request_key, request, name, mode, hosts, switches, params,"
            " state, created_at) VALUES (?, 'x', '{}', 'other', 'tag', '[]', '[]', '{}',"
            " 'active', 0)",
            (job.job_id,),
        )


def test_params_persist(tmp_path):
    s = JobStore(tmp_path / "j.db")
    job, _ = s.allocate("r1", "alpha", "tag", [], ["s1"], {"k": 0.02})
    s.set_job_params(job.job_id, {"tau": 0.5})
    s.set_global_params({"alpha_max": 8})
    s.close()
    s = JobStore(tmp_path / "j.db")
    assert s.get(job.job_id).params == {"k": 0.02, "tau": 0.5}
    assert s.global_params() == {"alpha_max": 8}
    s.close()


def test_a_host_is_taken_until_its_job_is_released_and_the_index_survives_reopen(tmp_path):
    """The host-clash check reads live_hosts: a releasing job still holds its addresses, a
    released one frees them, and a database whose live_hosts was lost (made before it existed)
    gets it rebuilt on open."""
    path = tmp_path / "jobs.db"
    s = JobStore(path)
    a, _ = s.allocate("r1", "alpha", "hosts", ["10.0.0.1"], ["s1"], {})
    s.release(a.job_id)
    with pytest.raises(JobError, match=r"10\.0\.0\.1 already belong to job"):
        s.allocate("r2", "beta", "hosts", ["10.0.0.1"], ["s1"], {})
    s.mark_cleared(a.uid, "s1")
    b, _ = s.allocate("r2", "beta", "hosts", ["10.0.0.1", "10.0.0.3"], ["s1"], {})
    s._db.execute("DELETE FROM live_hosts")  # as in a database from before the index
    s.close()
    s = JobStore(path)
    with pytest.raises(JobError) as err:
        s.allocate("r3", "gamma", "hosts", ["10.0.0.3"], ["s1"], {})
    assert err.value.message == f"10.0.0.3 already belong to job {b.job_id}"
    s.close()


def test_allocation_finds_gaps_from_the_index_like_the_allocator(store):
    """The store's free-ID search (counts on the index) picks what allocator.pick picks over the
    list of live IDs: after the cursor, wrapping, holes included."""
    from symphony.jobs import allocator

    for i in range(300):
        store.allocate(f"r{i}", f"j{i}", "tag", [], ["s1"], {})
    for job_id in (5, 6, 150, 299):
        job = store.get(job_id)
        store.release(job_id)
        store.mark_cleared(job.uid, "s1")
    for cursor in (0, 4, 5, 149, 298, 300, 8191):
        used = {j.job_id for j in store.list()}
        store._db.execute(
            "UPDATE globals SET value = ? WHERE key = 'allocator.cursor'", (str(cursor),)
        )
        job, _ = store.allocate(f"c{cursor}", f"c{cursor}", "tag", [], ["s1"], {})
        assert job.job_id == allocator.pick(used, "tag", cursor), cursor
        store.release(job.job_id)
        store.mark_cleared(job.uid, "s1")


def test_active_labels_follow_allocations_releases_and_refusals(store, tmp_path):
    """The labels telemetry reads are kept in memory after the first read: they must stay what
    the table says through allocations, releases, replays, refusals and a reopen."""

    def from_table(s: JobStore) -> list[tuple[int, str, tuple[str, ...]]]:
        rows = s._db.execute(
            "SELECT job_id, name, switches FROM jobs WHERE state = 'active' ORDER BY job_id"
        )
        return [(j, n, tuple(json.loads(sw))) for j, n, sw in rows]

    a, _ = store.allocate("r1", "alpha", "tag", [], ["s1"], {})
    assert store.active_labels() == from_table(store) == [(a.job_id, "alpha", ("s1",))]
    b, _ = store.allocate("r2", "beta", "hosts", ["10.0.0.1"], ["s1", "s2"], {})
    store.allocate("r2", "beta", "hosts", ["10.0.0.1"], ["s1", "s2"], {})  # a replay
    with pytest.raises(JobError):
        store.allocate("r3", "beta", "tag", [], ["s1"], {})  # name taken: nothing changes
    assert store.active_labels() == from_table(store)
    assert len(store.active_labels()) == 2
    store.release(a.job_id)
    store.release(a.job_id)  # idempotent
    assert store.active_labels() == from_table(store) == [(b.job_id, "beta", ("s1", "s2"))]
    store.mark_cleared(store.get(a.job_id).uid, "s1")
    c, _ = store.allocate("r4", "gamma", "tag", [], ["s2"], {})
    assert store.active_labels() == from_table(store)
    store.close()
    again = JobStore(tmp_path / "jobs.db")
    try:
        assert again.active_labels() == from_table(again)
        assert [j for j, _, _ in again.active_labels()] == sorted([b.job_id, c.job_id])
    finally:
        again.close()
