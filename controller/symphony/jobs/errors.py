"""Errors a job request can end in; the API maps each kind to one gRPC status code."""

from __future__ import annotations

import enum


class Kind(enum.Enum):
    INVALID = "invalid argument"
    NOT_FOUND = "not found"
    CONFLICT = "conflict"
    EXHAUSTED = "no Job_ID left"
    # This replica does not lead (replicated controllers): the caller should ask the leader.
    NOT_LEADER = "not the leader"


class JobError(Exception):
    """A refused request. ``field`` names the request field at fault ("" if none); ``leader`` is
    the API address of the replica that leads, when this one does not and knows it."""

    def __init__(self, kind: Kind, field: str, message: str, leader: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.kind = kind
        self.field = field
        self.message = message
        self.leader = leader


def invalid(field: str, message: str) -> JobError:
    return JobError(Kind.INVALID, field, message)


def not_leader(why: str, leader: str = "") -> JobError:
    where = f"; the leader is at {leader}" if leader else "; no leader right now, retry shortly"
    return JobError(Kind.NOT_LEADER, "", f"not the leader: {why}{where}", leader)


class StoreError(Exception):
    """The shared store (PostgreSQL) failed a call: unreachable, or the transaction failed.
    ``outcome_unknown``: the connection broke during COMMIT, so the change may or may not have
    been made (a retry with the same request key gets the one answer either way)."""

    def __init__(self, message: str, outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.outcome_unknown = outcome_unknown
