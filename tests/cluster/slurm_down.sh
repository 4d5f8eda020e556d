#!/usr/bin/env bash
# Stop the daemons that tests/cluster/slurm_up.sh started — exactly the PIDs it recorded, nothing else.
# Idempotent: missing or stale PID files are ignored. Configuration and packages are left in place, so the
# next slurm_up.sh is a warm start. SALTBENCH_SLURM_STATE selects the state dir (default
# /tmp/saltbench-slurm). Batch jobs still running keep running to their end (their slurmstepd is not ours
# to kill); the test workflows' jobs take seconds.
set -euo pipefail

STATE="${SALTBENCH_SLURM_STATE:-/tmp/saltbench-slurm}"
PIDS="$STATE/pids"

stop() {  # stop NAME: SIGTERM the recorded PID if it still runs NAME, wait, then SIGKILL
    local name="$1" f="$PIDS/$1.pid" pid i
    [[ -s "$f" ]] || return 0
    pid="$(cat "$f")"
    if [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/comm" && "$(cat "/proc/$pid/comm")" == "$name" ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            [[ -e "/proc/$pid" ]] || break
            sleep 0.1
        done
        if [[ -e "/proc/$pid" ]]; then
            echo "slurm_down: $name ($pid) ignored SIGTERM for 10 s, sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        echo "slurm_down: stopped $name ($pid)" >&2
    fi
    rm -f "$f"
}

# Reverse start order: compute node, controller, then munge (only if slurm_up.sh started it).
stop slurmd
stop slurmctld
stop munged
