from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Params(_message.Message):
    __slots__ = ("k", "tau", "t_win_us", "n_warmup", "n_sample", "alpha_max", "psn_mode", "gate_depth")
    K_FIELD_NUMBER: _ClassVar[int]
    TAU_FIELD_NUMBER: _ClassVar[int]
    T_WIN_US_FIELD_NUMBER: _ClassVar[int]
    N_WARMUP_FIELD_NUMBER: _ClassVar[int]
    N_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    ALPHA_MAX_FIELD_NUMBER: _ClassVar[int]
    PSN_MODE_FIELD_NUMBER: _ClassVar[int]
    GATE_DEPTH_FIELD_NUMBER: _ClassVar[int]
    k: float
    tau: float
    t_win_us: float
    n_warmup: int
    n_sample: int
    alpha_max: int
    psn_mode: str
    gate_depth: int
    def __init__(self, k: _Optional[float] = ..., tau: _Optional[float] = ..., t_win_us: _Optional[float] = ..., n_warmup: _Optional[int] = ..., n_sample: _Optional[int] = ..., alpha_max: _Optional[int] = ..., psn_mode: _Optional[str] = ..., gate_depth: _Optional[int] = ...) -> None: ...

class AllocateRequest(_message.Message):
    __slots__ = ("request_key", "name", "mode", "hosts", "switches", "params")
    REQUEST_KEY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    request_key: str
    name: str
    mode: str
    hosts: _containers.RepeatedScalarFieldContainer[str]
    switches: _containers.RepeatedScalarFieldContainer[str]
    params: Params
    def __init__(self, request_key: _Optional[str] = ..., name: _Optional[str] = ..., mode: _Optional[str] = ..., hosts: _Optional[_Iterable[str]] = ..., switches: _Optional[_Iterable[str]] = ..., params: _Optional[_Union[Params, _Mapping]] = ...) -> None: ...

class JobRef(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: str
    def __init__(self, job: _Optional[str] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("job_id", "name", "mode", "hosts", "switches", "params", "effective", "state", "pending", "created_at", "released_at", "request_key")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    RELEASED_AT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_KEY_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    name: str
    mode: str
    hosts: _containers.RepeatedScalarFieldContainer[str]
    switches: _containers.RepeatedScalarFieldContainer[str]
    params: Params
    effective: Params
    state: str
    pending: _containers.RepeatedScalarFieldContainer[str]
    created_at: float
    released_at: float
    request_key: str
    def __init__(self, job_id: _Optional[int] = ..., name: _Optional[str] = ..., mode: _Optional[str] = ..., hosts: _Optional[_Iterable[str]] = ..., switches: _Optional[_Iterable[str]] = ..., params: _Optional[_Union[Params, _Mapping]] = ..., effective: _Optional[_Union[Params, _Mapping]] = ..., state: _Optional[str] = ..., pending: _Optional[_Iterable[str]] = ..., created_at: _Optional[float] = ..., released_at: _Optional[float] = ..., request_key: _Optional[str] = ...) -> None: ...

class SwitchResult(_message.Message):
    __slots__ = ("switch", "status")
    SWITCH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    switch: str
    status: str
    def __init__(self, switch: _Optional[str] = ..., status: _Optional[str] = ...) -> None: ...

class JobReply(_message.Message):
    __slots__ = ("job", "created", "switches")
    JOB_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    job: Job
    created: bool
    switches: _containers.RepeatedCompositeFieldContainer[SwitchResult]
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., created: _Optional[bool] = ..., switches: _Optional[_Iterable[_Union[SwitchResult, _Mapping]]] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("include_released",)
    INCLUDE_RELEASED_FIELD_NUMBER: _ClassVar[int]
    include_released: bool
    def __init__(self, include_released: _Optional[bool] = ...) -> None: ...

class ListReply(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ...) -> None: ...

class LiveState(_message.Message):
    __slots__ = ("switch", "available", "error", "step_min", "psn_rec", "alpha", "window_packets", "window_ahead_packets", "win_start", "packets", "marks", "queue_marks", "step_max", "step_overlap")
    SWITCH_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STEP_MIN_FIELD_NUMBER: _ClassVar[int]
    PSN_REC_FIELD_NUMBER: _ClassVar[int]
    ALPHA_FIELD_NUMBER: _ClassVar[int]
    WINDOW_PACKETS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_AHEAD_PACKETS_FIELD_NUMBER: _ClassVar[int]
    WIN_START_FIELD_NUMBER: _ClassVar[int]
    PACKETS_FIELD_NUMBER: _ClassVar[int]
    MARKS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_MARKS_FIELD_NUMBER: _ClassVar[int]
    STEP_MAX_FIELD_NUMBER: _ClassVar[int]
    STEP_OVERLAP_FIELD_NUMBER: _ClassVar[int]
    switch: str
    available: bool
    error: str
    step_min: int
    psn_rec: int
    alpha: int
    window_packets: int
    window_ahead_packets: int
    win_start: int
    packets: int
    marks: int
    queue_marks: int
    step_max: int
    step_overlap: int
    def __init__(self, switch: _Optional[str] = ..., available: _Optional[bool] = ..., error: _Optional[str] = ..., step_min: _Optional[int] = ..., psn_rec: _Optional[int] = ..., alpha: _Optional[int] = ..., window_packets: _Optional[int] = ..., window_ahead_packets: _Optional[int] = ..., win_start: _Optional[int] = ..., packets: _Optional[int] = ..., marks: _Optional[int] = ..., queue_marks: _Optional[int] = ..., step_max: _Optional[int] = ..., step_overlap: _Optional[int] = ...) -> None: ...

class GetReply(_message.Message):
    __slots__ = ("job", "live")
    JOB_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    job: Job
    live: _containers.RepeatedCompositeFieldContainer[LiveState]
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., live: _Optional[_Iterable[_Union[LiveState, _Mapping]]] = ...) -> None: ...

class SetParamsRequest(_message.Message):
    __slots__ = ("job", "params")
    JOB_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    job: str
    params: Params
    def __init__(self, job: _Optional[str] = ..., params: _Optional[_Union[Params, _Mapping]] = ...) -> None: ...

class SetParamsReply(_message.Message):
    __slots__ = ("job", "switches")
    JOB_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    job: Job
    switches: _containers.RepeatedCompositeFieldContainer[SwitchResult]
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., switches: _Optional[_Iterable[_Union[SwitchResult, _Mapping]]] = ..., **kwargs) -> None: ...

class SwitchStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SwitchInfo(_message.Message):
    __slots__ = ("name", "address", "target", "state", "connected_since", "last_error", "connects", "last_reconcile", "last_reconcile_changes", "entries", "jobs", "ports", "neighbours", "routes", "ecmp_groups")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_SINCE_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    CONNECTS_FIELD_NUMBER: _ClassVar[int]
    LAST_RECONCILE_FIELD_NUMBER: _ClassVar[int]
    LAST_RECONCILE_CHANGES_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    NEIGHBOURS_FIELD_NUMBER: _ClassVar[int]
    ROUTES_FIELD_NUMBER: _ClassVar[int]
    ECMP_GROUPS_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    target: str
    state: str
    connected_since: float
    last_error: str
    connects: int
    last_reconcile: float
    last_reconcile_changes: int
    entries: int
    jobs: int
    ports: int
    neighbours: _containers.RepeatedScalarFieldContainer[str]
    routes: int
    ecmp_groups: int
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ..., target: _Optional[str] = ..., state: _Optional[str] = ..., connected_since: _Optional[float] = ..., last_error: _Optional[str] = ..., connects: _Optional[int] = ..., last_reconcile: _Optional[float] = ..., last_reconcile_changes: _Optional[int] = ..., entries: _Optional[int] = ..., jobs: _Optional[int] = ..., ports: _Optional[int] = ..., neighbours: _Optional[_Iterable[str]] = ..., routes: _Optional[int] = ..., ecmp_groups: _Optional[int] = ...) -> None: ...

class SwitchStatusReply(_message.Message):
    __slots__ = ("switches",)
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    switches: _containers.RepeatedCompositeFieldContainer[SwitchInfo]
    def __init__(self, switches: _Optional[_Iterable[_Union[SwitchInfo, _Mapping]]] = ...) -> None: ...
