"""Emulated RoCEv2 hosts on bmv2's veth ports, all driven by one event loop.

Each host owns one switch port: it sends and receives raw Ethernet frames on the host side of
that port's veth pair (an AF_PACKET socket bound to it), with its own IPv4 and MAC address.

- A **sender QP** sends RDMA WRITE messages (one per ring step: FIRST, MIDDLE..., LAST; the step
  in the UDP source port, the Job_ID in the BTH reserved bits, PSNs continuing from a random
  initial PSN, ECT(0)), paced at its DCQCN rate `rc`. A CNP addressed to its QPN cuts the rate.
- A **receiver QP** counts what arrives per step and answers a CE-marked packet with a CNP to the
  sender's QP, at most one per CNP interval (the DCQCN notification point). Under a profile with
  ACK frames (HPCC's NIC, `Dcqcn.ack_frames`) it answers every data packet with a RoCEv2 ACK
  instead, whose BECN bit carries the congestion notification (HPCC's CNP flag), and a sender
  with a window (`SenderQP.window`, HAS_WIN/VAR_WIN) sends only while its unacknowledged frames
  stay below it (`ReactionPoint.window_bytes`, the golden model's GetWin).

By default no packet is retransmitted: every frame sent is accounted for, received or lost at a
known place (evaluation/hosts/losses.py); the hosts count what they sent and read
(`host_counts`). With `rto_s` (off unless given: the experiments run without it) a QP is
reliable as RoCE's RC is with go-back-N: the receiver takes only the next PSN it expects and
discards a frame after a gap (`out_of_order`); a sender whose frames were all sent `rto_s` ago
and not all taken resends from the first PSN its receiver lacks (the receiver's state is in this
process, so it serves as the ACK; a real NIC learns it from ACKs, NAKs and its own timer).

Latency (`prop_s`, off unless given): bmv2's links have none at the emulation's time scale (a
switch's real latency of ~0.1 ms is a few ns of the 10 Gb/s fabric it stands for, and a frame
reaches the next hop as its rated queue releases it, with no serialisation), so a receiving host
holds each frame for its path's scaled propagation and store-and-forward serialisation before
it acts on it: the fabric's latency lumped at the path's end, as the simulator's round trip has
it (`fabric_experiment.FabricSetup.prop_s`).
"""

from __future__ import annotations

import errno
import gc
import heapq
import os
import random
import select
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from conformance import packets as rp
from evaluation.hosts import wire
from evaluation.hosts.calibration import LOG_MIN_MS
from evaluation.hosts.dcqcn import ReactionPoint, Scaled
from evaluation.hosts.losses import HostCounts, socket_drops
from evaluation.hosts.netns import packet_socket

ETH_P_IP = 0x0800
PACKET_OUTGOING = 4
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33
MAX_BURST = 8  # packets a QP or a NIC may send back to back to catch up after a stall
PSN_MASK = (1 << 24) - 1
LATE_LOG_S = LOG_MIN_MS / 1e3  # sends later than this go to Fabric.late_log
# The loop runs under SCHED_FIFO at this priority (root only; 0 = the normal scheduler): on a
# busy 2-core machine it cut the worst lateness of a run from 5-30 ms to about 1 ms
# (docs/experiments.md, "The harness loses nothing by itself"). It sleeps in select() between
# packets (a run takes 37-56 % of a core), and the kernel keeps 5 % of each second for others.
RT_PRIORITY = 20


@dataclass(frozen=True)
class Host:
    """One emulated host, keyed by `port`. On the one-switch testbed host i sits behind switch
    port i: address 10.0.i.1, MAC 02:00:00:00:00:(i+1), its interface in this namespace. A
    fabric host (symphony_tools/fabric.py) names its own address, MAC and namespace."""

    port: int
    ifname: str
    ip: str = ""
    mac: str = ""
    netns: str | None = None  # its interface lives in this network namespace

    @property
    def endpoint(self) -> wire.Endpoint:
        return wire.Endpoint(
            self.ip or f"10.0.{self.port}.1", self.mac or f"02:00:00:00:00:{self.port + 1:02x}"
        )


@dataclass
class StepLog:
    """One message (one step's chunk) of one QP, as seen by both ends; times in loop seconds."""

    step: int
    packets: int
    queued: float = float("nan")  # when the application posted it
    first_tx: float = float("nan")
    last_tx: float = float("nan")
    first_rx: float = float("nan")
    last_rx: float = float("nan")
    received: int = 0
    ce: int = 0
    first_psn: int = -1  # the PSN of its first packet, once sent (go-back-N finds it by PSN)


@dataclass
class SenderQP:
    """One RC queue pair sending to one receiver."""

    name: str
    src: Host
    dst: Host
    qpn: int  # its own QPN: CNPs name it
    dqpn: int  # the receiver's QPN: data packets name it
    tag: int
    frames: wire.FlowFrames
    rp: ReactionPoint
    psn: int
    frame_bytes: int
    messages: list[StepLog] = field(default_factory=list)  # every message posted, in order
    pending: deque[StepLog] = field(default_factory=deque)
    current: StepLog | None = None
    sent_in_msg: int = 0
    next_send: float = 0.0
    sent: int = 0
    max_lag: float = 0.0  # worst lateness of a send against when it was due (seconds)
    late_sends: int = 0  # sends later than one line-rate packet gap
    busy_time: float = 0.0  # seconds with a message to send
    busy_since: float | None = None
    rate_log: list[tuple[float, float]] = field(default_factory=list)  # (t, rc) after each change
    last_tx: float = 0.0  # loop time of its last frame
    retransmits: int = 0  # go-back-N rewinds (rto_s)
    resent: int = 0  # frames sent again after a rewind
    receiver: ReceiverQP | None = None
    window: int = 0  # HPCC's window in bytes before VAR_WIN's scaling (0: none)
    una: int = 0  # the first PSN not yet acknowledged (snd_una), under ACK frames
    acks: int = 0  # ACK frames received
    window_stalls: int = 0  # times a due send waited for an ACK (the window was full)
    window_bound: bool = False
    max_in_flight: int = 0  # most frames sent and not acknowledged at once (ACK frames)
    # ACK frames: (psn, loop time) of each frame not yet acknowledged, and the round trips
    # measured (send to its ACK, loop seconds): the fabric's RTT as the sender sees it
    unacked: deque[tuple[int, float]] = field(default_factory=deque)
    rtts: list[float] = field(default_factory=list)
    # loop time each data frame in flight left, by PSN: the receiver turns it into the frame's
    # wait in the fabric's queues (ReceiverQP.waits)
    sent_at: dict[int, float] = field(default_factory=dict)


@dataclass
class ReceiverQP:
    name: str
    host: Host
    sender: SenderQP
    last_cnp: float = -1e9
    cursor: int = 0  # index in sender.messages of the first message not fully received
    cnps: int = 0  # congestion notifications sent: CNP frames, or ACKs with BECN set
    acks: int = 0  # ACK frames sent (profiles with ACK frames)
    received: int = 0
    ce: int = 0
    arrivals: list[tuple[float, int, int]] = field(default_factory=list)  # (t, step, ce)
    expected_psn: int = 0  # go-back-N (rto_s): the next PSN it takes
    # (arrival, wait) per data frame, seconds: the time it spent in the switches' queues (its
    # one-way delay less the path's latency the hosts add): the queue timeline of its path
    waits: list[tuple[float, float]] = field(default_factory=list)
    out_of_order: int = 0  # frames discarded after a gap (rto_s)


class Fabric:
    """All hosts of one experiment, their QPs and the loop that runs them."""

    def __init__(
        self,
        hosts: list[Host],
        dcqcn: Scaled,
        *,
        payload: int,
        seed: int,
        rt_priority: int = RT_PRIORITY,
        rto_s: float | None = None,
        prop_s: Callable[[int, int], float] | None = None,
    ) -> None:
        self.hosts = {h.port: h for h in hosts}
        # one-way propagation (emulated seconds) from the host at one port to another's
        self.prop_s = prop_s
        self.held: list[tuple[float, int, int, bytes]] = []  # (due, order, port, frame)
        self._held_n = 0
        self._port_of_ip = {wire.ip_bytes(h.endpoint.ip): h.port for h in hosts}
        self.rto_s = rto_s  # None: nothing is retransmitted (the experiments)
        self.rt_priority = rt_priority
        self.realtime = False  # whether the last run() got SCHED_FIFO
        self.p = dcqcn
        self.ack_frames = dcqcn.profile.ack_frames  # an ACK per data packet, else CNPs only
        self.payload = payload
        self.rng = random.Random(seed)
        self.socks: dict[int, socket.socket] = {}
        self.senders: dict[int, SenderQP] = {}  # by qpn
        self.receivers: dict[tuple[bytes, int], ReceiverQP] = {}  # (src ip, dqpn)
        self.cnp_frames: dict[int, bytes] = {}  # sender qpn -> the CNP frame that names it
        self.on_delivered: Callable[[ReceiverQP, StepLog, float], None] | None = None
        self.t0 = 0.0
        self.unexpected = 0  # frames addressed to no QP of ours
        self.host_drops = 0  # frames the hosts' sockets dropped (see rx_drops)
        self.frames_sent = 0  # every frame the hosts sent: data and CNPs
        self.frames_received = 0  # every frame the hosts read (their own sends excluded)
        self.send_errors = 0  # sends the kernel refused (the frame never left)
        self.nic_free: dict[int, float] = {}  # per host: when its link can take the next frame
        self.rr_last: dict[int, int] = {}  # per host: the index of the QP its NIC served last
        self.draining = False  # after the run: count what arrives, answer nothing
        self.last_activity = 0.0  # loop time of the last frame sent or received
        # Every send of the last run later than calibration.LOG_MIN_MS: (loop time, lateness),
        # seconds; the calibration's measure of what the machine gives the loop.
        self.late_log: list[tuple[float, float]] = []
        self.loop_s = 0.0  # how long the last run's loop ran
        self._next_qpn = 0x100

    # -- set-up ---------------------------------------------------------------------------
    def open(self) -> None:
        for port, h in self.hosts.items():
            s = packet_socket(h.ifname, h.netns, ETH_P_IP)
            # FORCE: as root, past net.core.rmem_max (~200 frames by default), so a stall of
            # the loop never overflows a socket; what still overflows is counted (rx_drops).
            s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
            s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 16 << 20)
            s.setblocking(False)
            self.socks[port] = s
        self._drain()

    def rx_drops(self) -> int:
        """Frames the kernel dropped because a host's socket was full (PACKET_STATISTICS):
        losses of the emulated hosts, not of the switch. Reading resets the kernel's count."""
        for s in self.socks.values():
            self.host_drops += socket_drops(s)
        return self.host_drops

    def drain(self) -> HostCounts:
        """After the run: read what the sockets still hold (late CNPs, frames of an unfinished
        run), counted but not answered; the hosts' counts for the loss attribution."""
        self.draining = True
        by_fd = {s.fileno(): port for port, s in self.socks.items()}
        self._receive(by_fd, list(self.socks.values()))
        self._release(float("inf"))
        return HostCounts(self.frames_sent, self.frames_received, self.rx_drops())

    def host_counts(self) -> HostCounts:
        return HostCounts(self.frames_sent, self.frames_received, self.host_drops)

    def quiet_for(self, now: float) -> float:
        """How long no frame was sent or received, when no QP has anything left to send (a run
        that lost a frame waits for it forever: this ends it); 0 while a QP is busy."""
        if self.held or any(qp.current is not None for qp in self.senders.values()):
            return 0.0
        return now - self.last_activity

    def close(self) -> None:
        self.rx_drops()
        for s in self.socks.values():
            s.close()
        self.socks.clear()

    def connect(self, name: str, src: int, dst: int, tag: int, window: int = 0) -> SenderQP:
        """An RC connection src -> dst: a sender QP and its receiver QP. `window`: HPCC's
        window in bytes (the simulator's `flow_windows`), 0 for none; it needs ACK frames."""
        if window and not self.ack_frames:
            raise ValueError(f"{name}: a window needs ACK frames (profile {self.p.profile.name})")
        qpn, dqpn = self._next_qpn, self._next_qpn + 1
        self._next_qpn += 2
        s, d = self.hosts[src], self.hosts[dst]
        frames = wire.FlowFrames(
            s.endpoint, d.endpoint, dqpn=dqpn, tag=tag, payload_len=self.payload
        )
        frame_bytes = len(frames.build(rp.WRITE_MIDDLE, 0, 0))
        qp = SenderQP(
            name=name,
            src=s,
            dst=d,
            qpn=qpn,
            dqpn=dqpn,
            tag=tag,
            frames=frames,
            rp=ReactionPoint(self.p, 0.0),
            psn=self.rng.randrange(1 << 24),  # real NICs start a QP at a random PSN (SPEC 2)
            frame_bytes=frame_bytes,
            window=window,
        )
        qp.una = qp.psn
        self.senders[qpn] = qp
        key = (wire.ip_bytes(s.endpoint.ip), dqpn)
        rx = self.receivers[key] = ReceiverQP(name=name, host=d, sender=qp, expected_psn=qp.psn)
        qp.receiver = rx
        self.cnp_frames[qpn] = wire.cnp(d.endpoint, s.endpoint, qpn)
        return qp

    def post(self, qp: SenderQP, step: int, packets: int, now: float) -> StepLog:
        """The application posts one message: step `step`, `packets` packets."""
        msg = StepLog(step=step, packets=packets, queued=now)
        qp.messages.append(msg)
        qp.pending.append(msg)
        if qp.current is None:
            self._start_next(qp, now)
        return msg

    # -- the loop -------------------------------------------------------------------------
    def now(self) -> float:
        return time.perf_counter() - self.t0

    def run(
        self,
        until: Callable[[float], bool],
        timers: list[tuple[float, Callable[[float], None]]] | None = None,
        limit_s: float = 120.0,
    ) -> float:
        """Run until `until(now)` is true (checked after every batch) or `limit_s` passes.
        `timers`: (time, callback) the application wants called once. Returns the end time."""
        # The loop allocates a tuple per packet; a full collection in the middle of a run is a
        # stall of tens of ms, so collect before and freeze what exists.
        gc.collect()
        gc.freeze()
        gc_was = gc.isenabled()
        gc.disable()
        self.realtime = _realtime(self.rt_priority)
        self.late_log = []
        try:
            self.loop_s = self._run(until, timers or [], limit_s)
            return self.loop_s
        finally:
            if self.realtime:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            if gc_was:
                gc.enable()
            gc.unfreeze()

    def _run(
        self,
        until: Callable[[float], bool],
        timers: list[tuple[float, Callable[[float], None]]],
        limit_s: float,
    ) -> float:
        self.t0 = time.perf_counter()
        self.held.clear()
        for qp in self.senders.values():
            qp.rp = ReactionPoint(self.p, 0.0)
            qp.rate_log.append((0.0, qp.rp.rc))
        todo = sorted(timers, key=lambda t: t[0])
        senders = list(self.senders.values())
        nics: dict[int, list[SenderQP]] = {}  # per host link, its QPs in the order made
        for qp in senders:
            nics.setdefault(qp.src.port, []).append(qp)
        self.rr_last = {port: len(qps) - 1 for port, qps in nics.items()}
        self.nic_free = dict.fromkeys(self.hosts, 0.0)
        socks = list(self.socks.values())
        by_fd = {s.fileno(): port for port, s in self.socks.items()}
        while True:
            now = self.now()
            while todo and todo[0][0] <= now:
                todo.pop(0)[1](now)
            for qp in senders:
                if now >= qp.rp.next_deadline():
                    qp.rp.on_time(now)
                    self._rate_changed(qp, now)
            if self.rto_s is not None:
                for qp in senders:
                    self._go_back(qp, now)
            self._send_due(nics, now)
            self._receive(by_fd, socks)
            if self.held:
                self._release(self.now())
            if until(now) or now > limit_s:
                return now
            deadline = min(
                [
                    max(qp.next_send, self.nic_free[qp.src.port])
                    for qp in senders
                    if qp.current is not None and not qp.window_bound  # an ACK wakes it
                ]
                + [qp.rp.next_deadline() for qp in self.senders.values()]
                + [t for t, _ in todo[:1]]
                + [h[0] for h in self.held[:1]]
                + [now + 0.005]
            )
            wait = deadline - self.now()
            if wait > 0:
                r, _, _ = select.select(socks, [], [], wait)
                if r:
                    self._receive(by_fd, r)

    def _go_back(self, qp: SenderQP, now: float) -> None:
        """Go-back-N: every frame of `qp` sent, the last `rto_s` ago, and its receiver still
        lacks some -> resend from the first one it lacks (that message, then the rest)."""
        rx = qp.receiver
        assert rx is not None and self.rto_s is not None
        if qp.current is not None or rx.expected_psn == qp.psn or now - qp.last_tx < self.rto_s:
            return
        missing = rx.expected_psn
        i = next(
            (
                i
                for i, m in enumerate(qp.messages)
                if m.first_psn >= 0 and (missing - m.first_psn) & PSN_MASK < m.packets
            ),
            None,
        )
        if i is None:
            return
        msg = qp.messages[i]
        offset = (missing - msg.first_psn) & PSN_MASK
        qp.retransmits += 1
        qp.resent += (qp.psn - missing) & PSN_MASK
        qp.pending.extendleft(reversed(qp.messages[i + 1 :]))
        qp.pending.appendleft(msg)
        qp.psn = missing
        self._start_next(qp, now)
        qp.sent_in_msg = offset

    def _start_next(self, qp: SenderQP, now: float) -> None:
        if qp.pending:
            qp.current = qp.pending.popleft()
            qp.sent_in_msg = 0
            qp.next_send = max(qp.next_send, now)
            if qp.busy_since is None:
                qp.busy_since = now
        else:
            qp.current = None
            if qp.busy_since is not None:
                qp.busy_time += now - qp.busy_since
                qp.busy_since = None

    def _send_due(self, nics: dict[int, list[SenderQP]], now: float) -> None:
        """Send every packet that is due, within each host NIC's line rate: a host's QPs
        share its link, served round robin from the one after the last served (HPCC's
        RdmaHw::GetNxtQp and its m_rrlast; the kernel's ready queue does the same). A scan of
        all QPs in one order would give a host's first QP the link whenever several are due,
        and so run its sends one after another where the simulator runs them side by side
        (docs/experiments.md, "One NIC in both instruments": the regime fabric's convoys)."""
        line_gap = 1.0 / self.p.line_pps
        progress = True
        while progress:
            progress = False
            for port, qps in nics.items():
                if self.nic_free[port] > now:
                    continue
                n, last = len(qps), self.rr_last[port]
                for i in range(1, n + 1):
                    k = (last + i) % n
                    qp = qps[k]
                    if qp.current is None or qp.next_send > now:
                        continue
                    if qp.window:
                        was = qp.window_bound
                        if self._win_bound(qp):  # at the current rate (VAR_WIN)
                            continue
                        if was:  # opened by a rate increase, not an ACK
                            self._window_opened(qp, now)
                    # A stalled loop does not make up for lost time in one burst: like a
                    # NIC's rate limiter, credit is capped at MAX_BURST packets (a long burst
                    # would overflow the switch's input, not its bottleneck queue).
                    wanted = max(self.nic_free[port], qp.next_send)  # for the lateness
                    qp.next_send = max(qp.next_send, now - MAX_BURST / qp.rp.rc)
                    self.nic_free[port] = max(self.nic_free[port], now - MAX_BURST * line_gap)
                    due = max(self.nic_free[port], qp.next_send)
                    self.nic_free[port] = due + line_gap
                    self._send_one(qp, now, wanted)
                    self.rr_last[port] = k
                    progress = True
                    break

    def _win_bound(self, qp: SenderQP) -> bool:
        """IsWinBound: the frames sent and not acknowledged fill the window (at the current
        rate under VAR_WIN), counted in whole frames as the kernel counts them."""
        in_flight = ((qp.psn - qp.una) & PSN_MASK) * qp.frame_bytes
        bound = in_flight >= qp.rp.window_bytes(qp.window)
        if bound and not qp.window_bound:
            qp.window_stalls += 1
        qp.window_bound = bound
        return bound

    def _window_opened(self, qp: SenderQP, now: float) -> None:
        """The window let a held frame go at `now`: it is due then, not at its pacing time
        (ns-3 sends it as soon as the window opens; its pacing credit is not a burst), so the
        loop's lateness is counted from here."""
        qp.next_send = max(qp.next_send, now)

    def _send_one(self, qp: SenderQP, now: float, due: float) -> None:
        """One packet of `qp`'s message; `due` is when its rate and its NIC allowed it."""
        msg = qp.current
        assert msg is not None
        gap = 1.0 / qp.rp.rc
        i, n = qp.sent_in_msg, msg.packets
        op = rp.write_opcode(i, n)
        self._send(qp.src.port, qp.frames.build(op, msg.step & 0xFFFF, qp.psn), now)
        lag = now - due  # how late the event loop was, not the NIC's own queueing
        if lag > qp.max_lag:
            qp.max_lag = lag
        if lag > LATE_LOG_S:
            self.late_log.append((now, lag))
        if lag > min(gap, 1.0 / self.p.line_pps):
            qp.late_sends += 1
        if i == 0 and msg.first_psn < 0:
            msg.first_tx = now
            msg.first_psn = qp.psn
        qp.last_tx = now
        if self.ack_frames:
            qp.unacked.append((qp.psn, now))
        qp.sent_at[qp.psn] = now
        qp.psn = (qp.psn + 1) & PSN_MASK
        if self.ack_frames:
            qp.max_in_flight = max(qp.max_in_flight, (qp.psn - qp.una) & PSN_MASK)
        qp.sent += 1
        qp.sent_in_msg += 1
        qp.rp.on_sent(now, qp.frame_bytes)
        qp.next_send += gap
        if qp.window:
            self._win_bound(qp)
        if qp.sent_in_msg == n:
            msg.last_tx = now
            self._start_next(qp, now)

    def _send(self, port: int, frame: bytes, now: float) -> None:
        try:
            self.socks[port].send(frame)
        except OSError as e:
            # ENOBUFS / EAGAIN: the kernel did not take the frame. The QP goes on as a NIC
            # whose frame was lost on the wire would; the run counts it (a harness loss).
            if e.errno not in (errno.ENOBUFS, errno.EAGAIN):
                raise
            self.send_errors += 1
            return
        self.frames_sent += 1
        self.last_activity = now

    def _rate_changed(self, qp: SenderQP, now: float) -> None:
        if not qp.rate_log or qp.rate_log[-1][1] != qp.rp.rc:
            qp.rate_log.append((now, qp.rp.rc))

    def _drain(self) -> None:
        for s in self.socks.values():
            try:
                while s.recv(65535):
                    pass
            except BlockingIOError:
                pass
        self.rx_drops()  # what was dropped before the run is not the run's
        self.host_drops = 0

    def _receive(self, by_fd: dict[int, int], socks: list[socket.socket]) -> None:
        for s in socks:
            port = by_fd[s.fileno()]
            for _i in range(256):
                try:
                    data, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue
                self.frames_received += 1
                if self.prop_s is None:
                    self._handle(port, data)
                else:
                    self._hold(port, data)

    def _hold(self, port: int, data: bytes) -> None:
        """Keep a frame until its path's latency has passed (`prop_s`); a frame from no host
        of ours is acted on at once (counted as unexpected there)."""
        assert self.prop_s is not None
        now = self.now()
        self.last_activity = now
        src = self._port_of_ip.get(data[wire.IP_OFF + 12 : wire.IP_OFF + 16])
        delay = 0.0 if src is None else self.prop_s(src, port)
        self._held_n += 1
        heapq.heappush(self.held, (now + delay, self._held_n, port, data))

    def _release(self, now: float) -> None:
        """Act on every held frame whose propagation has passed by `now`, in arrival order."""
        while self.held and self.held[0][0] <= now:
            _due, _n, port, data = heapq.heappop(self.held)
            self._handle(port, data)

    def _handle(self, port: int, data: bytes) -> None:
        p = wire.parse(data)
        if p is None:
            self.unexpected += 1
            return
        now = self.now()
        self.last_activity = now
        if p.opcode == rp.CNP or p.opcode == rp.ACK:
            qp = self.senders.get(p.dqpn)
            if qp is None or qp.src.port != port:
                self.unexpected += 1
                return
            if p.opcode == rp.ACK:
                qp.acks += 1
                # cumulative: every PSN up to p.psn; a late ACK of an older PSN moves nothing
                if (p.psn + 1 - qp.una) & PSN_MASK <= (qp.psn - qp.una) & PSN_MASK:
                    qp.una = (p.psn + 1) & PSN_MASK
                    while qp.unacked and (p.psn - qp.unacked[0][0]) & PSN_MASK < 1 << 23:
                        psn, sent = qp.unacked.popleft()
                        if psn == p.psn:
                            qp.rtts.append(now - sent)
                    if qp.window_bound and not self._win_bound(qp):
                        self._window_opened(qp, now)
                if not p.becn:
                    return
            qp.rp.on_cnp(now)
            self._rate_changed(qp, now)
            return
        rx = self.receivers.get((p.src, p.dqpn))
        if rx is None or rx.host.port != port:
            self.unexpected += 1
            return
        if self.rto_s is not None:
            if p.psn != rx.expected_psn:
                rx.out_of_order += 1  # go-back-N: after a gap, only the missing PSN is taken
                return
            rx.expected_psn = (rx.expected_psn + 1) & PSN_MASK
        ce = int(p.ecn == wire.CE)
        sent = rx.sender.sent_at.pop(p.psn, None)
        if sent is not None:
            arrived = now - (self.prop_s(rx.sender.src.port, port) if self.prop_s else 0.0)
            rx.waits.append((arrived, arrived - sent))
        rx.received += 1
        rx.ce += ce
        rx.arrivals.append((now, p.step, ce))
        msg = self._rx_message(rx, p.step)
        if msg is not None:
            if msg.received == 0:
                msg.first_rx = now
            msg.received += 1
            msg.ce += ce
            if msg.received == msg.packets:
                msg.last_rx = now
                if self.on_delivered is not None and not self.draining:
                    self.on_delivered(rx, msg, now)
        if self.draining:
            return
        notify = ce and now - rx.last_cnp >= self.p.cnp_interval_s
        if notify:
            rx.last_cnp = now
            rx.cnps += 1
        if self.ack_frames:
            qp = rx.sender
            rx.acks += 1
            self._send_control(
                port, wire.ack(rx.host.endpoint, qp.src.endpoint, qp.qpn, p.psn, notify), now
            )
        elif notify:
            self._send_control(port, self.cnp_frames[rx.sender.qpn], now)

    def _send_control(self, port: int, frame: bytes, now: float) -> None:
        """An ACK or a CNP: sent at once (a NIC serves its ACK queue first) and taking one
        packet's time of the host's link, as every frame does on bmv2's packet-rated links;
        the host's data waits for it."""
        self.nic_free[port] = max(self.nic_free.get(port, 0.0), now) + 1.0 / self.p.line_pps
        self._send(port, frame, now)

    def _rx_message(self, rx: ReceiverQP, step: int) -> StepLog | None:
        """The message this packet belongs to: the first one of its step not yet complete
        (one QP delivers its messages in order)."""
        msgs = rx.sender.messages
        while rx.cursor < len(msgs) and msgs[rx.cursor].received >= msgs[rx.cursor].packets:
            rx.cursor += 1
        for msg in msgs[rx.cursor : rx.cursor + 4]:
            if msg.step & 0xFFFF == step:
                return msg
        return None


def _realtime(priority: int) -> bool:
    """Put the calling thread under SCHED_FIFO at `priority` (only the loop's thread: the
    reports and plots that follow run at the normal priority again). False when not allowed."""
    if priority <= 0:
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (PermissionError, OSError):
        return False
    return True
