"""The `dbench` load: dbench 4 (Debian package dbench) replaying its NetBench
client loadfile (/usr/share/dbench/client.txt: a Windows file server's
creates, writes, reads, renames, locks, deletes and flushes, which the fileio
backend turns into system calls, a flush into fsync) with N clients in the
mount for --runtime seconds; dbench's own throughput line, MB/s.  Issue 25's
table runs 8 clients.
"""

import re

METRIC = "MB/s"
CLIENTS = 8
LOADFILE = "/usr/share/dbench/client.txt"
# dbench counts nothing during its warm-up: a 1 s run reports 0 MB/sec.
MIN_SECONDS = 3

_THROUGHPUT = re.compile(r"^Throughput ([0-9.]+) MB/sec\s+(\d+) clients", re.M)


class DbenchError(Exception):
    pass


def seconds(runtime):
    """dbench's whole-second time limit for a --runtime of `runtime` seconds."""
    return max(MIN_SECONDS, round(runtime))


def command(dbench_bin, directory, clients, seconds, loadfile=LOADFILE):
    return [dbench_bin, "-D", directory, "-t", str(seconds), "-c", loadfile, str(clients)]


def parse_throughput(text, clients):
    """dbench's stdout -> MB/s; DbenchError when its summary line is missing or for other clients."""
    m = _THROUGHPUT.search(text or "")
    if not m:
        raise DbenchError("dbench printed no 'Throughput ... MB/sec' line")
    if int(m.group(2)) != clients:
        raise DbenchError(f"dbench ran {m.group(2)} clients, not {clients}")
    mb = float(m.group(1))
    if mb <= 0:
        raise DbenchError("dbench measured 0 MB/sec: the run ended within its warm-up")
    return mb
