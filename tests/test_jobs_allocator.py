"""Job_ID allocation: properties of the pure chooser and of the persistent store."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from symphony.jobs import allocator
from symphony.jobs.allocator import MAX_JOBS, TAG_MAX, pick
from symphony.jobs.errors import JobError, Kind
from symphony.jobs.store import JobStore

ids = st.integers(min_value=1, max_value=MAX_JOBS - 1)


@given(
    used=st.sets(ids, max_size=300),
    mode=st.sampled_from(["tag", "hosts"]),
    cursor=st.integers(min_value=0, max_value=MAX_JOBS),
)
def test_pick_returns_a_free_id_the_mode_can_use(used, mode, cursor):
    got = pick(used, mode, cursor)
    assert got is not None
    assert got not in used
    assert 1 <= got <= (TAG_MAX if mode == "tag" else MAX_JOBS - 1)


@given(used=st.sets(st.integers(min_value=TAG_MAX + 1, max_value=MAX_JOBS - 1), max_size=50))
def test_hosts_mode_prefers_ids_tags_cannot_name(used):
    got = pick(used, "hosts")
    assert got is not None and got > TAG_MAX


@given(cursor=st.integers(min_value=1, max_value=TAG_MAX - 1), data=st.data())
def test_pick_rotates_after_the_cursor(cursor, data):
    """The next ID is the first free one after the cursor: a just-freed ID is reused last."""
    used = data.draw(st.sets(st.integers(min_value=1, max_value=TAG_MAX), max_size=100))
    got = pick(used, "tag", cursor)
    assert got is not None
    # every ID strictly between cursor and got (cyclically) is used
    span = (got - cursor - 1) % TAG_MAX
    for i in range(span):
        between = (cursor + i) % TAG_MAX + 1
        assert between in used


def test_pick_none_when_full():
    assert pick(set(range(1, TAG_MAX + 1)), "tag") is None
    assert pick(set(range(1, MAX_JOBS)), "hosts") is None
    # hosts mode falls back to the tag range when the upper half is full
    assert pick(set(range(TAG_MAX + 1, MAX_JOBS)), "hosts") == 1


class StoreMachine(RuleBasedStateMachine):
    """Random allocate / release / clear / reopen sequences against the SQLite store.

    Invariants: live Job_IDs are unique; an ID is handed out again only after the job that held
    it was cleared on every switch; a retried request key returns the same job.
    """

    SWITCHES = ("s1", "s2", "s3")

    def __init__(self):
        super().__init__()
        import tempfile
        from pathlib import Path

        self.dir = tempfile.TemporaryDirectory()
        self.path = Path(self.dir.name) / "jobs.db"
        self.store = JobStore(self.path)
        self.n = 0
        self.model: dict[str, dict] = {}  # request_key -> {"job_id", "state", "pending"}

    def teardown(self):
        self.store.close()
        self.dir.cleanup()

    def _live_ids(self):
        return {m["job_id"] for m in self.model.values() if m["state"] != "released"}

    @rule(
        mode=st.sampled_from(["tag", "hosts"]),
        switches=st.lists(st.sampled_from(SWITCHES), min_size=1, max_size=3, unique=True),
    )
    def allocate(self, mode, switches):
        self.n += 1
        key = f"k{self.n}"
        hosts = [f"10.0.{self.n // 250}.{self.n % 250 + 1}"] if mode == "hosts" else []
        job, created = self.store.allocate(key, f"job{self.n}", mode, hosts, switches, {})
        assert created
        assert job.job_id not in self._live_ids(), "Job_ID handed out twice"
        self.model[key] = {
            "job_id": job.job_id,
            "state": "active",
            "switches": switches,
            "pending": set(),
            "uid": job.uid,
            "mode": mode,
            "hosts": hosts,
            "name": f"job{self.n}",
        }

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def retry_allocate(self, data):
        key = data.draw(st.sampled_from(sorted(self.model)))
        m = self.model[key]
        job, created = self.store.allocate(key, m["name"], m["mode"], m["hosts"], m["switches"], {})
        assert not created
        assert job.job_id == m["job_id"]

    @precondition(lambda self: any(m["state"] == "active" for m in self.model.values()))
    @rule(data=st.data())
    def release(self, data):
        key = data.draw(
            st.sampled_from(sorted(k for k, m in self.model.items() if m["state"] == "active"))
        )
        m = self.model[key]
        job = self.store.release(m["job_id"])
        assert job.state == "releasing"
        m["state"] = "releasing"
        m["pending"] = set(m["switches"])

    @precondition(lambda self: any(m["state"] == "releasing" for m in self.model.values()))
    @rule(data=st.data())
    def clear_one_switch(self, data):
        key = data.draw(
            st.sampled_from(sorted(k for k, m in self.model.items() if m["state"] == "releasing"))
        )
        m = self.model[key]
        sw = data.draw(st.sampled_from(sorted(m["pending"])))
        job = self.store.mark_cleared(m["uid"], sw)
        m["pending"].discard(sw)
        if not m["pending"]:
            m["state"] = "released"
        assert job.state == m["state"]

    @rule()
    def reopen(self):
        """What a restart sees is what was committed."""
        self.store.close()
        self.store = JobStore(self.path)

    @invariant()
    def store_matches_model(self):
        live = {j.request_key: j for j in self.store.list()}
        expect = {k for k, m in self.model.items() if m["state"] != "released"}
        assert set(live) == expect
        assert len({j.job_id for j in live.values()}) == len(live)
        for k, j in live.items():
            assert j.job_id == self.model[k]["job_id"]
            assert set(j.pending) == self.model[k]["pending"]


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)


def test_store_exhaustion_is_an_error_and_changes_nothing(tmp_path, monkeypatch):
    store = JobStore(tmp_path / "j.db")
    monkeypatch.setattr(allocator, "TAG_MAX", 3)
    monkeypatch.setattr(allocator, "ranges_for", lambda mode: (range(1, 4),))
    for i in range(3):
        store.allocate(f"k{i}", f"j{i}", "tag", [], ["s1"], {})
    before = store.list(include_released=True)
    try:
        store.allocate("k9", "j9", "tag", [], ["s1"], {})
    except JobError as exc:
        assert exc.kind is Kind.EXHAUSTED
    else:
        raise AssertionError("expected EXHAUSTED")
    assert store.list(include_released=True) == before
