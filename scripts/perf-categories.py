#!/usr/bin/env python3
"""Where a process's CPU time went, by library and kind (docs/performance.md "Where the time goes").

    perf record -e cpu-clock -F 4000 -g -p <worker pid> -o worker.data -- sleep 3
    scripts/perf-categories.py worker.data [THREAD-NAME-SUBSTRING]

Each sample is classified by its leaf frame (`perf script -F comm,ip,sym,dso`): libcurl,
nghttp2, OpenSSL, librdkafka, hiredis, the allocator (jemalloc, or glibc's malloc/free),
Swift reference counting and allocation, the rest of our Swift, the kernel (scheduling and
futexes, network, memory, other), libc's string/memory functions and locks. With a thread
name (`pw-http-io`, `pushworker`, `qos`, `rdk:`) only that thread's samples are counted.
"""
import collections
import re
import subprocess
import sys


def classify(sym: str, dso: str) -> str:
    if dso.startswith('libcurl'): return 'libcurl'
    if 'nghttp2' in dso: return 'nghttp2'
    if dso.startswith('libssl') or dso.startswith('libcrypto'): return 'openssl'
    if 'rdkafka' in dso or 'lz4' in dso: return 'librdkafka'
    if 'hiredis' in dso: return 'hiredis'
    if 'jemalloc' in dso: return 'malloc (jemalloc)'
    if 'kernel' in dso:
        if re.search(r'schedule|switch|futex|wake|ttwu|enqueue|dequeue|pick_next|update_curr|select_task', sym): return 'kernel: scheduling, futex'
        if re.search(r'page|fault|clear_page|mm_|lru|folio|memcg', sym): return 'kernel: memory'
        if re.search(r'tcp|ip_|skb|sock|net|nf_|loopback|__dev|dst_|sk_', sym): return 'kernel: network'
        return 'kernel: other'
    if dso.startswith('libc.so'):
        if re.search(r'malloc|free|_int_|calloc|realloc|unlink_chunk|consolidate|tcache', sym): return 'malloc (glibc)'
        if re.search(r'mem(cpy|move|set|cmp|chr)|str', sym): return 'libc: memory/string'
        if re.search(r'pthread|futex|lll_|mutex|cond', sym): return 'libc: locks'
        return 'libc: other'
    if 'pushworker' in dso:
        if re.search(r'^swift_(retain|release|bridgeObjectRe)|RefCounts|_swift_release_dealloc|swift_arrayDestroy|'
                     r'swift_allocObject|swift_deallocClassInstance|swift_slowAlloc|swift_slowDealloc|objectdestroy', sym):
            return 'Swift: reference counting, allocation'
        if sym.startswith('swift_') or sym.startswith('_swift') or 'swift::' in sym: return 'Swift: runtime, other'
        return 'Swift: our code'
    if 'vdso' in dso: return 'vdso (clock)'
    return dso


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    data, thread = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else '')
    out = subprocess.run(['perf', 'script', '-i', data, '-F', 'comm,ip,sym,dso'], capture_output=True, text=True, check=True).stdout
    counts, total = collections.Counter(), 0
    for block in out.split('\n\n'):
        lines = [line for line in block.split('\n') if line.strip()]
        if len(lines) < 2 or thread not in lines[0]:
            continue
        leaf = re.match(r'\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$', lines[1])
        if not leaf:
            continue
        total += 1
        counts[classify(re.sub(r'\+0x[0-9a-f]+$', '', leaf.group(2)), leaf.group(3).split('/')[-1])] += 1
    print(f'{total} samples' + (f' of threads named *{thread}*' if thread else ''))
    for name, count in counts.most_common():
        print(f'{100 * count / max(total, 1):6.2f} %  {name}')


if __name__ == '__main__':
    main()
