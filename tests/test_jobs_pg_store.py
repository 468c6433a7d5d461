"""The job store on both backends: the same answers from SQLite and from a real PostgreSQL
(idempotent request keys, conflicts, the release lifecycle, the free-ID search, the label
cache), the versioned migrations, and PostgreSQL's fenced writes and leader lease."""

from __future__ import annotations

import json
import sqlite3

import psycopg
import pytest

from symphony.jobs import allocator, migrations
from symphony.jobs.errors import JobError, Kind, StoreError
from symphony.jobs.lease import Lease
from symphony.jobs.pg_store import PgJobStore
from symphony.jobs.store import JobStore


def leading(url: str, name: str = "r1") -> tuple[PgJobStore, Lease]:
    """A PostgreSQL store whose writes are fenced by a lease this test holds."""
    store = PgJobStore(url)
    lease = Lease(url, name, f"{name}:50051", ttl_s=30)
    held = lease.try_acquire()
    assert held is not None
    store.epoch = held.epoch
    return store, lease


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request, tmp_path, pg):
    if request.param == "sqlite":
        s = JobStore(tmp_path / "jobs.db")
        yield s
        s.close()
        return
    s, lease = leading(pg.new_database())
    yield s
    s.close()
    lease.close()


def test_idempotent_keys_conflicts_and_the_release_lifecycle(any_store):
    s = any_store
    a, created = s.allocate("req-1", "alpha", "hosts", ["10.0.0.1"], ["s1", "s2"], {"k": 0.02})
    again, created2 = s.allocate("req-1", "alpha", "hosts", ["10.0.0.1"], ["s1", "s2"], {"k": 0.02})
    assert created and not created2 and a == again
    with pytest.raises(JobError) as err:
        s.allocate("req-1", "alpha", "tag", [], ["s1"], {})
    assert err.value.kind is Kind.CONFLICT and err.value.field == "request_key"
    with pytest.raises(JobError, match="name"):
        s.allocate("req-2", "alpha", "tag", [], ["s1"], {})
    with pytest.raises(JobError) as err:
        s.allocate("req-3", "beta", "hosts", ["10.0.0.1"], ["s1"], {})
    assert err.value.message == f"10.0.0.1 already belong to job {a.job_id}"
    rel = s.release(a.job_id)
    assert rel.state == "releasing" and set(rel.pending) == {"s1", "s2"}
    assert s.release(a.job_id).pending == rel.pending
    assert s.mark_cleared(a.uid, "s1").state == "releasing"
    assert s.get(a.job_id) is not None  # quarantined until every switch cleared it
    done = s.mark_cleared(a.uid, "s2")
    assert done.state == "released" and done.released_at is not None
    assert s.get(a.job_id) is None and s.get_by_key("req-1").state == "released"
    b, _ = s.allocate("req-4", "beta", "hosts", ["10.0.0.1"], ["s1"], {})  # host and name free
    assert s.get_by_name("beta") == b == s.by_uid(b.uid)
    assert s.count_by_state() == {"active": 1}
    with pytest.raises(JobError) as err:
        s.release(16000)
    assert err.value.kind is Kind.NOT_FOUND


def test_parameters(any_store):
    s = any_store
    job, _ = s.allocate("r1", "alpha", "tag", [], ["s1"], {"k": 0.02})
    assert s.set_job_params(job.job_id, {"tau": 0.5}).params == {"k": 0.02, "tau": 0.5}
    assert s.set_global_params({"alpha_max": 8}) == {"alpha_max": 8}
    assert s.set_global_params({"k": 0.1}) == {"alpha_max": 8, "k": 0.1}
    assert s.global_params() == {"alpha_max": 8, "k": 0.1}


def test_free_id_search_matches_the_allocator(any_store):
    s = any_store
    for i in range(120):
        s.allocate(f"r{i}", f"j{i}", "tag", [], ["s1"], {})
    for job_id in (5, 6, 60, 119):
        job = s.get(job_id)
        s.release(job_id)
        s.mark_cleared(job.uid, "s1")
    for cursor in (0, 4, 5, 59, 118, 120, 8191):
        used = {j.job_id for j in s.list()}
        with s._tx() as db:
            s._set_global(db, "allocator.cursor", cursor)
        job, _ = s.allocate(f"c{cursor}", f"c{cursor}", "tag", [], ["s1"], {})
        assert job.job_id == allocator.pick(used, "tag", cursor), cursor
        s.release(job.job_id)
        s.mark_cleared(job.uid, "s1")


def test_labels_follow_writes_and_a_refusal_changes_nothing(any_store):
    s = any_store

    def table() -> list[tuple[int, str, tuple[str, ...]]]:
        rows = s._db.execute(
            "SELECT job_id, name, switches FROM jobs WHERE state = 'active' ORDER BY job_id"
        ).fetchall()
        return [(r[0], r[1], tuple(json.loads(r[2]))) for r in rows]

    a, _ = s.allocate("r1", "alpha", "tag", [], ["s1"], {})
    assert s.active_labels() == table() == [(a.job_id, "alpha", ("s1",))]
    with pytest.raises(JobError):
        s.allocate("r2", "alpha", "tag", [], ["s1"], {})
    b, _ = s.allocate("r3", "beta", "tag", [], ["s2"], {})
    s.release(a.job_id)
    assert s.active_labels() == table() == [(b.job_id, "beta", ("s2",))]


def test_schema_versions_are_recorded_and_a_newer_schema_is_refused(tmp_path, pg):
    path = tmp_path / "jobs.db"
    JobStore(path).close()
    db = sqlite3.connect(path)
    assert [r[0] for r in db.execute("SELECT version FROM schema_version")] == [
        m.version for m in migrations.MIGRATIONS
    ]
    db.execute("INSERT INTO schema_version VALUES (?, 'future', 0)", (migrations.LATEST + 1,))
    db.commit()
    db.close()
    with pytest.raises(migrations.SchemaTooNew, match="newer than this controller"):
        JobStore(path)

    url = pg.new_database()
    PgJobStore(url).close()
    PgJobStore(url).close()  # a second open (another replica) applies nothing twice
    with psycopg.connect(url, autocommit=True) as c:
        versions = [r[0] for r in c.execute("SELECT version FROM schema_version ORDER BY 1")]
        assert versions == [m.version for m in migrations.MIGRATIONS]
        c.execute("INSERT INTO schema_version VALUES (%s, 'future', 0)", (migrations.LATEST + 1,))
    with pytest.raises(migrations.SchemaTooNew):
        PgJobStore(url)


def test_a_database_from_before_the_migrations_is_adopted(tmp_path):
    """A SQLite file made by the controller before schema_version existed keeps its jobs."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for statement in migrations.MIGRATIONS[0].sqlite:
        db.execute(statement)
    db.execute(
        "INSERT INTO jobs (job_id, request_key, request, name, mode, hosts, switches, params,"
        " state, created_at) VALUES (7, 'k', '{}', 'old', 'hosts', '[\"10.0.0.9\"]', '[\"s1\"]',"
        " '{}', 'active', 0)"
    )
    db.commit()
    db.close()
    s = JobStore(path)
    assert s.get(7).name == "old"
    with pytest.raises(JobError, match=r"10\.0\.0\.9 already belong to job 7"):
        s.allocate("k2", "new", "hosts", ["10.0.0.9"], ["s1"], {})
    s.close()


def test_writes_are_fenced_by_the_lease_epoch(pg):
    """A follower's store writes nothing; a deposed leader's next write is refused with
    NOT_LEADER naming the new leader, and what it committed before stays."""
    url = pg.new_database()
    follower = PgJobStore(url)
    with pytest.raises(JobError) as err:
        follower.allocate("k", "n", "tag", [], ["s1"], {})
    assert err.value.kind is Kind.NOT_LEADER
    old, old_lease = leading(url, "r1")
    kept, _ = old.allocate("k1", "n1", "tag", [], ["s1"], {})
    # r1's lease connection goes away (its process died): r2 takes over at once.
    old_lease.close()
    new_lease = Lease(url, "r2", "10.0.0.2:50051", ttl_s=30)
    held = new_lease.try_acquire()
    assert held is not None and held.epoch == old.epoch + 1
    with pytest.raises(JobError) as err:
        old.allocate("k2", "n2", "tag", [], ["s1"], {})
    assert err.value.kind is Kind.NOT_LEADER and err.value.leader == "10.0.0.2:50051"
    assert "epoch 1 has ended" in err.value.message
    follower.epoch = held.epoch
    assert follower.get_by_key("k1") == kept and follower.get_by_key("k2") is None
    follower.allocate("k2", "n2", "tag", [], ["s1"], {})
    for s in (old, follower):
        s.close()
    new_lease.close()


def test_the_lease_expires_renews_and_names_its_holder(pg):
    url = pg.new_database()
    PgJobStore(url).close()
    a = Lease(url, "a", "a:1", ttl_s=0.5)
    b = Lease(url, "b", "b:1", ttl_s=0.5)
    held = a.try_acquire()
    assert held is not None and b.try_acquire() is None
    info = b.leader()
    assert (info.epoch, info.holder, info.address, info.live) == (held.epoch, "a", "a:1", True)
    assert a.renew(held) is not None
    # a stops renewing (paused) but its session lives on: b takes over once the lease expired.
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("UPDATE leader_lease SET expires_at = now() - interval '1 second'")
    taken = b.try_acquire()
    assert taken is not None and taken.epoch == held.epoch + 1
    assert a.renew(held) is None  # a learns it lost the lease
    b.release(taken)
    again = a.try_acquire()
    assert again is not None and again.epoch == taken.epoch + 1
    a.close()
    b.close()


def test_an_unreachable_database_is_a_store_error(pg):
    with pytest.raises(StoreError, match="cannot connect"):
        PgJobStore("postgresql://postgres@127.0.0.1:1/none")
