"""Errors a job request can end in; the API maps each kind to one gRPC status code."""

from __future__ import annotations

import enum


class Kind(enum.Enum):
    INVALID = "invalid argument"
    NOT_FOUND = "not found"
    CONFLICT = "conflict"
    EXHAUSTED = "no Job_ID left"


class JobError(Exception):
    """A refused request. ``field`` names the request field at fault ("" if none)."""

    def __init__(self, kind: Kind, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.kind = kind
        self.field = field
        self.message = message


def invalid(field: str, message: str) -> JobError:
    return JobError(Kind.INVALID, field, message)
