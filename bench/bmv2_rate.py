"""bmv2 packet rate of the Symphony pipeline, on against off, side by side in one run.

"Off" is the same program with Symphony switched off by the control plane: the job's entries
are removed, so its packets are classified, miss, and skip the per-job state and the marking
arithmetic. "On" tracks them with the full path (flow slot, per-job registers, three log
lookups, the threshold table and the coin: the lagging and outpacing flows keep 0 < P < 1).

Rounds alternate on/off (ABAB...) so drift of the machine hits both alike; the result is the
ratio of the median rates. In both modes the frames take the pipeline's other per-frame work as
the fabric's switches run it (issue 46): their route names an ECMP group (one member, so the hash
and the member lookup run and every frame still reaches port 1) and the ACK class is on (its
entries written; a data frame's opcode misses them); `--no-ecmp` and `--no-ack-class` leave
either out, as the bench ran before them. Needs a running bmv2 (scripts/run_bench.sh starts
one) and root.

    python bench/bmv2_rate.py --packets 20000 --rounds 5

The sender is Python: ``--sender-check`` first measures the same send/receive loop without the
switch in the path (frames sent on the host side of port 0 and read back from its switch side,
where bmv2 reads them too), so the "off" rate can be compared with what the sender can do.
``--build`` picks another compiled program (e.g. to compare two versions of p4src side by side).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the packet builders live on the test side (conformance/)

from conformance import packets as rp  # noqa: E402
from symphony.model.params import JobParams  # noqa: E402
from symphony.model.tables import TableEntrySpec  # noqa: E402
from symphony.p4names import FLOW_BASE, JOB_COUNTERS, JOB_REGISTERS  # noqa: E402
from symphony.sizes import BMV2_TICK_NS  # noqa: E402
from symphony.switch import desired  # noqa: E402
from symphony.switch.desired import ecmp_group_entries, ecmp_route  # noqa: E402
from symphony.switch.thrift_registers import Bmv2Thrift  # noqa: E402
from symphony_tools import testbed  # noqa: E402
from symphony_tools.blocking import BlockingSwitch  # noqa: E402

JOB = 1
ETH_P_ALL = 0x0003
OUT_PORT = 1  # the workload's destination, 10.0.1.0/24 (conformance.packets.rocev2's dst)
ECMP_GROUP = 1


def path_entries(*, ecmp: bool, ack_class: bool) -> list[TableEntrySpec]:
    """The switch's entries apart from the job's: testbed's routes and tables, with the
    workload's route through a one-member ECMP group and the ACK class's entries if asked."""
    base = testbed.base_entries()
    if ecmp:
        prefix = 0x0A000000 | OUT_PORT << 8
        base = [
            *ecmp_group_entries(ECMP_GROUP, [OUT_PORT]),
            *(e for e in base if e.match.get("dst_addr") != (prefix, 24)),
            ecmp_route(prefix, 24, ECMP_GROUP),
        ]
    return base + (desired.ack_class_entries() if ack_class else [])


def workload(n: int) -> list[bytes]:
    """A lagging flow (step 0) and an outpacing one (step 1), interleaved; P stays in (0, 1)."""
    out = []
    for i in range(n):
        if i % 2 == 0:
            pkt = rp.rocev2(opcode=rp.WRITE_MIDDLE, step=0, psn=1000 + i, tag=JOB, src="10.0.0.2")
        else:
            pkt = rp.rocev2(
                opcode=rp.WRITE_MIDDLE, step=1, psn=500 + i // 4, tag=JOB, src="10.0.0.1"
            )
        out.append(bytes(pkt))
    return out


def measure(
    frames: list[bytes], tx_if: str, rx_if: str, window: int = 32, idle_s: float = 2.0
) -> tuple[int, float]:
    """The switch's service rate: keep at most `window` packets in flight (sent, not yet
    received), so bmv2's input is never overrun and no packet is lost to the measurement itself;
    (frames received, seconds from first send to last receive)."""
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    rx.bind((rx_if, 0))
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    rx.settimeout(idle_s)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((tx_if, 0))
    got = 0
    last = 0.0
    done = threading.Event()

    def receive() -> None:
        nonlocal got, last
        while got < len(frames):
            try:
                data = rx.recv(65535)
            except TimeoutError:
                break
            if len(data) > 40 and data[12:14] == b"\x08\x00":
                got += 1
                last = time.perf_counter()
        done.set()

    thread = threading.Thread(target=receive)
    thread.start()
    start = time.perf_counter()
    for sent, f in enumerate(frames):
        while sent - got >= window and not done.is_set():
            time.sleep(0.00005)
        tx.send(f)
    thread.join()
    rx.close()
    tx.close()
    return got, max(last - start, 1e-9)


def switch_pid(env: testbed.Bmv2Env) -> int:
    return int((env.run_dir / "switch.pid").read_text())


def switch_cpu_s(env: testbed.Bmv2Env) -> float | None:
    """CPU seconds bmv2 has used so far (user + system, all threads), from its pid file; None
    when the switch is not bmv2_env's. Per packet it is steadier than the rate on a loaded
    machine: other processes take the switch's turns on the cores, not its work."""
    try:
        fields = Path(f"/proc/{switch_pid(env)}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def callgrind(env: testbed.Bmv2Env, *args: str) -> None:
    """`callgrind_control` on the switch bmv2_env started under valgrind's callgrind (see
    "Where the cycles go" in bench/README.md): instruction counts per function, which other
    load on the machine does not change."""
    subprocess.run(["callgrind_control", *args, str(switch_pid(env))], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    env = testbed.Bmv2Env.from_env()  # the switch bmv2_env/ started (SYMPHONY_* variables)
    parser.add_argument("--grpc", default=env.grpc_addr)
    parser.add_argument("--thrift-port", type=int, default=env.thrift_port)
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "bmv2")
    parser.add_argument("--window", type=int, default=32, help="packets in flight at most")
    parser.add_argument("--sender-check", action="store_true")
    parser.add_argument("--no-ecmp", action="store_true", help="a plain route to port 1")
    parser.add_argument("--no-ack-class", action="store_true", help="the ACK class's table empty")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="the switch runs under callgrind: zero its counts before a round, dump after",
    )
    args = parser.parse_args()

    build = args.build
    sw = BlockingSwitch(
        args.grpc,
        device_id=0,
        p4info=build / "symphony.p4info.txtpb",
        p4blob=build / "symphony.json",
        name="bench",
    )
    thrift = Bmv2Thrift("127.0.0.1", args.thrift_port)
    sw.delete_all()
    sw.write(path_entries(ecmp=not args.no_ecmp, ack_class=not args.no_ack_class))
    # Absolute PSNs: every packet has a known p, so the whole marking path runs.
    params = JobParams(k=0.05, n_warmup=4, n_sample=32, psn_mode="absolute").to_action_params(
        BMV2_TICK_NS
    )
    job = desired.entries_for(JOB, params)
    frames = workload(args.packets)
    if args.sender_check:
        # Port 0's switch side sees every frame the moment the kernel delivers it: the rate of
        # the sender and the kernel alone, with the same loop and window.
        got, secs = measure(frames, env.host_if(0), env.switch_if(0), args.window)
        print(f"sender alone (no switch in the path): {got / secs:,.0f} pkt/s", flush=True)
    rates: dict[str, list[float]] = {"on": [], "off": []}
    cpu_us: dict[str, list[float]] = {"on": [], "off": []}  # bmv2 CPU per packet
    for r in range(args.rounds):
        for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
            for name in [*JOB_REGISTERS.values(), FLOW_BASE]:
                thrift.register_reset(name)
            for name in JOB_COUNTERS.values():
                thrift.counter_reset(name)
            if mode == "on":
                sw.write(job)
            if args.callgrind:
                callgrind(env, "--zero")
            cpu0 = switch_cpu_s(env)
            got, secs = measure(frames, env.host_if(0), env.host_if(1), args.window)
            cpu1 = switch_cpu_s(env)
            if args.callgrind:
                callgrind(env, f"--dump={mode}-round{r}-{got}pkts")
            if cpu0 is not None and cpu1 is not None and got:
                cpu_us[mode].append((cpu1 - cpu0) / got * 1e6)
            if mode == "on":
                seen = thrift.counter_read(JOB_COUNTERS["packets"], JOB)[1]
                marks = thrift.counter_read(JOB_COUNTERS["marks"], JOB)[1]
                sw.write(list(reversed(job)), kind="delete")
                assert seen >= got, "tracked fewer packets than were forwarded"
                note = f"tracked {seen}, Symphony marks {marks}"
            else:
                note = "untracked"
            rates[mode].append(got / secs)
            print(
                f"round {r} {mode:>3}: {got}/{len(frames)} packets in {secs:.3f} s = "
                f"{got / secs:,.0f} pkt/s ({note})",
                flush=True,
            )
    on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
    print(f"\nmedian rate: Symphony on {on:,.0f} pkt/s, off {off:,.0f} pkt/s")
    if cpu_us["on"] and cpu_us["off"]:
        # Every bmv2 thread during the round: the idle P4Runtime and Thrift servers add little.
        c_on, c_off = statistics.median(cpu_us["on"]), statistics.median(cpu_us["off"])
        print(
            f"median bmv2 CPU per packet: on {c_on:.1f} us, off {c_off:.1f} us"
            f" (off/on = {c_off / c_on:.3f}, the rate ratio if the switch had the cores alone)"
        )
    print(
        f"ratio on/off = {on / off:.3f}  (command: python bench/bmv2_rate.py "
        f"--packets {args.packets} --rounds {args.rounds} --window {args.window} "
        f"--build {build}{' --no-ecmp' * args.no_ecmp}{' --no-ack-class' * args.no_ack_class})"
    )
    sw.close()


if __name__ == "__main__":
    main()
