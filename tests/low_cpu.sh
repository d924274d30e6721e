#!/usr/bin/env bash
# Run a command with a small share of the CPU: in a CPU cgroup of its own whose weight is an eighth
# of a normal one (cgroup v1 cpu.shares 128 of 1024; v2 cpu.weight 12 of 100). `make test` runs the
# unit tests this way beside the real-cluster tests on a 2-core machine, so that the unit tests take
# the CPU the cluster's tests leave idle (about 40% of it) and little more. `nice` cannot do this:
# with the kernel's autogroups on, every broker and workload runs in a session of its own, CPU is
# shared between sessions first, and a nice inside one session counts only against that session
# (docs/BENCHMARKS.md, "Test suite wall times"). Children stay in the cgroup whatever session they
# open, which a nice or an autogroup cannot promise.
#
#   tests/low_cpu.sh --check        exit 0 if a CPU cgroup can be made here (root, cgroup v1 or v2)
#   tests/low_cpu.sh CMD [ARG...]   run CMD in one; its exit code is CMD's. Without a cgroup, exit 2
#                                   and run nothing (the caller chooses what to do instead).
#
# The cgroup is removed when CMD ends; one left by a killed run is removed by the next (an empty
# cgroup is removed, one still holding processes is left to them).
set -uo pipefail

PREFIX=eos-chaos-low-cpu-

# The folder of this process's own CPU cgroup and the file its weight goes into, as "DIR FILE VALUE".
find_cpu_cgroup() {
    local mnt rel
    # cgroup v1: a hierarchy with the cpu controller (mounted alone or as cpu,cpuacct)
    mnt=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
    if [ -n "$mnt" ]; then
        rel=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3; exit}' /proc/self/cgroup)
        echo "$mnt${rel%/} cpu.shares 128"
        return 0
    fi
    # cgroup v2: only where the cpu controller is already enabled for this cgroup's children
    mnt=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
    rel=$(awk -F: '$1 == "0" {print $3; exit}' /proc/self/cgroup)
    if [ -n "$mnt" ] && grep -qw cpu "$mnt${rel%/}/cgroup.subtree_control" 2>/dev/null; then
        echo "$mnt${rel%/} cpu.weight 12"
        return 0
    fi
    return 1
}

read -r parent weight_file weight < <(find_cpu_cgroup) || true
usable() { [ -n "${parent:-}" ] && [ -w "$parent/cgroup.procs" ] && [ -w "$parent" ]; }

if [ "${1:-}" = --check ]; then
    usable
    exit $?
fi
if [ $# -eq 0 ]; then
    echo "usage: tests/low_cpu.sh --check | CMD [ARG...]" >&2
    exit 2
fi
if ! usable; then
    echo "tests/low_cpu.sh: no CPU cgroup can be made here (it needs root and cgroup v1's cpu controller, or v2's enabled below this cgroup)" >&2
    exit 2
fi

for stale in "$parent/$PREFIX"*; do
    [ -d "$stale" ] && rmdir "$stale" 2>/dev/null
done
group="$parent/$PREFIX$$"
if ! mkdir "$group" || ! echo "$weight" > "$group/$weight_file" || ! echo $$ > "$group/cgroup.procs"; then
    echo "tests/low_cpu.sh: could not make the CPU cgroup $group" >&2
    rmdir "$group" 2>/dev/null
    exit 2
fi

# in a process group of its own, so that a signal forwarded here reaches the command's children too
# (a `bash -c` that SIGTERM ends would leave its pytest running)
setsid "$@" &
child=$!
trap 'kill -TERM -- -$child 2>/dev/null || kill -TERM $child 2>/dev/null' TERM INT
rc=0
wait $child || rc=$?
while kill -0 $child 2>/dev/null; do  # a signal ended the first wait: wait for the command itself
    wait $child || rc=$?
done
echo $$ > "$parent/cgroup.procs"
# a child the command left behind may still be on its way out (a JVM's shutdown): 30 s for it
for _ in $(seq 60); do
    [ -z "$(cat "$group/cgroup.procs" 2>/dev/null)" ] && break
    sleep 0.5  # the poll interval of a wait with a deadline (60 polls)
done
rmdir "$group" 2>/dev/null || echo "tests/low_cpu.sh: $group still holds processes; the next run removes it once they are gone" >&2
exit $rc
