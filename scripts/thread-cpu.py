#!/usr/bin/env python3
"""CPU and context switches per notification of each thread of a running worker
(docs/performance.md "Where the time goes").

    scripts/thread-cpu.py N &          # N: the notifications the bench will send
    taskset -c 0 .build/release/pushworker-dev bench e2e --notifications N ...

Waits for the first `pushworker run` process, reads its `/metrics` port from its environment
(PUSHWORKER_HTTP_ADDR), and between 15 % and 85 % of N results (its own
`pushworker_notifications_total`) sums each thread's utime+stime (/proc/<pid>/task/*/stat) and
voluntary/involuntary context switches (/proc/<pid>/task/*/status) by thread name: `pw-http-io`
(the HTTP I/O thread), `pushworker` (the consumer loop), `pw-rdk-producer` (the producer's
event thread: delivery reports),
`-qos.overcommit` (Dispatch: the finisher that records outcomes and produces results),
`rdk:broker*` (librdkafka's broker threads). Samples every 0.5 s: scraping /metrics costs the
worker a little itself. Clock ticks are 10 ms, so keep the window to several seconds.
"""
import os
import sys
import time
import urllib.request

HZ = os.sysconf('SC_CLK_TCK')


def workers():
    out = []
    for p in os.listdir('/proc'):
        if not p.isdigit():
            continue
        try:
            cmd = open(f'/proc/{p}/cmdline', 'rb').read().split(b'\0')
            if len(cmd) >= 2 and cmd[0].endswith(b'pushworker') and cmd[1] == b'run':
                env = open(f'/proc/{p}/environ', 'rb').read().split(b'\0')
                addr = [e for e in env if e.startswith(b'PUSHWORKER_HTTP_ADDR=')]
                port = int(addr[0].split(b':')[-1]) if addr else 9400
                out.append((int(p), port))
        except OSError:
            pass
    return out


def notifications(port):
    try:
        text = urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics', timeout=2).read().decode()
    except OSError:
        return None
    return sum(float(line.rsplit(' ', 1)[1]) for line in text.splitlines() if line.startswith('pushworker_notifications_total'))


def threads(pid):
    found = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            comm = open(f'/proc/{pid}/task/{tid}/comm').read().strip()
            stat = open(f'/proc/{pid}/task/{tid}/stat').read()
            fields = stat[stat.rfind(')') + 2:].split()
            voluntary = involuntary = 0
            for line in open(f'/proc/{pid}/task/{tid}/status'):
                if line.startswith('voluntary_ctxt_switches'):
                    voluntary = int(line.split()[1])
                if line.startswith('nonvoluntary_ctxt_switches'):
                    involuntary = int(line.split()[1])
            found[tid] = (comm, int(fields[11]) + int(fields[12]), voluntary, involuntary)
        except OSError:
            pass
    return found


def main():
    target = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
    low, high = 0.15 * target, 0.85 * target
    while not workers():
        time.sleep(0.1)
    pid, port = workers()[0]
    start = None
    while True:
        count = notifications(port)
        if count is None:
            if not os.path.exists(f'/proc/{pid}'):
                sys.exit('the worker ended before the window closed')
            time.sleep(0.1)
            continue
        if start is None and count >= low:
            start = (count, threads(pid))
        if start and count >= high:
            end = (count, threads(pid))
            break
        time.sleep(0.5)
    results = end[0] - start[0]
    cpu, voluntary, involuntary = {}, {}, {}
    for tid, (comm, ticks, vol, invol) in end[1].items():
        before = start[1].get(tid, (comm, 0, 0, 0))
        cpu[comm] = cpu.get(comm, 0) + ticks - before[1]
        voluntary[comm] = voluntary.get(comm, 0) + vol - before[2]
        involuntary[comm] = involuntary.get(comm, 0) + invol - before[3]
    total = sum(cpu.values()) or 1
    print(f'worker {pid}: {results:.0f} notifications; {total / HZ * 1e6 / results:.1f} µs CPU per notification')
    for comm, ticks in sorted(cpu.items(), key=lambda item: -item[1]):
        if ticks:
            print(f'  {comm:20s} {ticks / HZ * 1e6 / results:7.1f} µs  {100 * ticks / total:5.1f} %  '
                  f'switches per notification: voluntary {voluntary[comm] / results:.3f}, involuntary {involuntary[comm] / results:.3f}')


if __name__ == '__main__':
    main()
