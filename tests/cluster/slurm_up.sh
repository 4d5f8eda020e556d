#!/usr/bin/env bash
# Bring up a single-node SLURM cluster on this host for integration tests (idempotent).
#
#   sudo tests/cluster/slurm_up.sh            # install (if needed), configure, start, wait until idle
#   tests/cluster/slurm_down.sh               # stop exactly the daemons this script started
#
# What it does:
#   1. apt-installs slurmctld slurmd slurm-client munge when any of them is missing (needs root + apt-get);
#   2. creates a munge key when none exists;
#   3. writes /etc/slurm/{slurm,gres,cgroup}.conf for one node named `hostname -s` with its CPUs and
#      (most of) its memory from `slurmd -C`, plus fake GPUs (GRES "gpu" backed by placeholder files),
#      and one partition "gpu" (Default=YES). An existing slurm.conf that this script did not write is
#      never overwritten (the script stops with an error instead);
#   4. starts munged, slurmctld and slurmd as daemons, records their PIDs under $SALTBENCH_SLURM_STATE/pids,
#      and waits until `sinfo` reports the node idle (error with the daemons' log tails on timeout).
#
# Environment knobs: SALTBENCH_SLURM_STATE (state dir, default /tmp/saltbench-slurm),
# SALTBENCH_SLURM_GPUS (fake GPUs on the node, default 2), SALTBENCH_SLURM_GPU_TYPE (their model name, for
# gpu_model requests: default "fake"), SALTBENCH_SLURM_TIMEOUT (seconds to wait, default 60).
set -euo pipefail

STATE="${SALTBENCH_SLURM_STATE:-/tmp/saltbench-slurm}"
N_GPUS="${SALTBENCH_SLURM_GPUS:-2}"
GPU_TYPE="${SALTBENCH_SLURM_GPU_TYPE:-fake}"
TIMEOUT="${SALTBENCH_SLURM_TIMEOUT:-60}"
CONF_DIR=/etc/slurm
MARKER="# written by saltbench tests/cluster/slurm_up.sh"
PIDS="$STATE/pids"
LOGS="$STATE/log"
# Talk to this cluster even if the caller's SLURM_CONF points elsewhere.
export SLURM_CONF="$CONF_DIR/slurm.conf"

log() { echo "slurm_up: $*" >&2; }
die() { echo "slurm_up: ERROR: $*" >&2; exit 1; }

alive() {  # alive NAME: the PID recorded for NAME runs a process whose command is NAME
    local f="$PIDS/$1.pid" pid
    [[ -s "$f" ]] || return 1
    pid="$(cat "$f")"
    [[ -r "/proc/$pid/comm" ]] && [[ "$(cat "/proc/$pid/comm")" == "$1" ]]
}

node_state() { sinfo --noheader --nodes="$NODE" --format='%t' 2>/dev/null | head -n1 | tr -d ' *'; }

dump_logs() {
    local f
    for f in "$LOGS"/*.log; do
        [[ -e "$f" ]] || continue
        echo "----- tail of $f -----" >&2
        tail -n 25 "$f" >&2 || true
    done
}

# --- 1. packages --------------------------------------------------------------------------------------
missing=()
for pkg in slurmctld slurmd slurm-client munge; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    [[ "$(id -u)" == 0 ]] || die "packages ${missing[*]} are missing; installing needs root (uid $(id -u))"
    command -v apt-get >/dev/null || die "packages ${missing[*]} are missing and apt-get is not available"
    log "installing ${missing[*]} from apt"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # A policy-rc.d that denies everything keeps the packages' own services from starting (we run the
    # daemons ourselves). One already present (Docker images ship one) is left exactly as it is.
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    if [[ "$(trap -p EXIT)" == *policy-rc.d* ]]; then
        rm -f /usr/sbin/policy-rc.d
        trap - EXIT
    fi
fi
[[ "$(id -u)" == 0 ]] || die "configuring and starting SLURM needs root (uid is $(id -u))"
VERSION="$(slurmd -V | awk '{print $2}')"
NODE="$(hostname -s)"

# --- already up? ----------------------------------------------------------------------------------------
if alive slurmctld && alive slurmd && [[ "$(node_state)" =~ ^(idle|mix|alloc)$ ]]; then
    log "already up (SLURM $VERSION, node $NODE $(node_state))"
    exit 0
fi

# --- 2. host name and munge key -------------------------------------------------------------------------
if ! getent hosts "$NODE" >/dev/null; then
    log "adding $NODE to /etc/hosts"
    echo "127.0.0.1 $NODE" >>/etc/hosts
fi
if [[ ! -s /etc/munge/munge.key ]]; then
    log "creating munge key"
    install -d -o munge -g munge -m 0700 /etc/munge
    if command -v mungekey >/dev/null; then
        mungekey --create --keyfile=/etc/munge/munge.key
    else
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    fi
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
fi

# --- 3. configuration -----------------------------------------------------------------------------------
mkdir -p "$PIDS" "$LOGS" "$STATE/ctld" "$STATE/spool" "$STATE/gpu"
if [[ -e "$CONF_DIR/slurm.conf" ]] && ! grep -qF "$MARKER" "$CONF_DIR/slurm.conf"; then
    die "$CONF_DIR/slurm.conf exists and was not written by this script; refusing to overwrite it"
fi
# The node's hardware line from slurmd -C (NodeName=... CPUs=... Boards=... RealMemory=...), minus UpTime.
HW="$(slurmd -C | head -n1)"
CPUS="$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$HW")"
REAL_MEM="$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$HW")"
[[ "$CPUS" =~ ^[0-9]+$ && "$REAL_MEM" =~ ^[0-9]+$ ]] || die "could not parse 'slurmd -C': $HW"
MEM=$((REAL_MEM * 9 / 10))  # 10% headroom: other processes share this host
NODE_LINE="$(sed -e "s/ RealMemory=[0-9]*/ RealMemory=$MEM/" -e 's/ UpTime=.*//' <<<"$HW")"
# Fake GPUs: character devices with /dev/null's numbers (1,3). slurmd rejects regular files, and with real
# device files it sets CUDA_VISIBLE_DEVICES / SLURM_JOB_GPUS from their index. Where mknod is not allowed,
# fall back to count-only GRES (the request is still scheduled and recorded, without device variables).
GRES_LINE="NodeName=$NODE Name=gpu Type=$GPU_TYPE File=$STATE/gpu/fakegpu[0-$((N_GPUS - 1))]"
for ((i = 0; i < N_GPUS; i++)); do
    dev="$STATE/gpu/fakegpu$i"
    [[ -c "$dev" ]] && continue
    rm -f "$dev"
    if ! mknod -m 0666 "$dev" c 1 3 2>/dev/null; then
        log "mknod not permitted: fake GPUs without device files (no CUDA_VISIBLE_DEVICES in jobs)"
        GRES_LINE="NodeName=$NODE Name=gpu Type=$GPU_TYPE Count=$N_GPUS"
        break
    fi
done

install -d "$CONF_DIR"
cat >"$CONF_DIR/slurm.conf" <<EOF
$MARKER (SLURM $VERSION) — single-node test cluster, do not use in production
ClusterName=saltbench
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
# Test cluster: look at pending jobs every second instead of every 30-60 s.
SchedulerParameters=bf_interval=1,sched_interval=1
GresTypes=gpu
DefMemPerCPU=100
# Keep finished jobs visible to squeue for an hour: without slurmdbd, squeue is the only status source.
MinJobAge=3600
ReturnToService=2
SlurmctldPort=6817
SlurmdPort=6818
SlurmctldPidFile=$PIDS/slurmctld.pid
SlurmdPidFile=$PIDS/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
Waittime=0
$NODE_LINE Gres=gpu:$GPU_TYPE:$N_GPUS State=UNKNOWN
PartitionName=gpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
cat >"$CONF_DIR/gres.conf" <<EOF
$MARKER
AutoDetect=off
$GRES_LINE
EOF
# slurmd (22.05+) loads a cgroup plugin even with proctrack/linuxproc + task/none; "autodetect" fails in
# containers with a hybrid or read-only cgroup tree, so name the version the host actually mounts.
if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then CGROUP=cgroup/v2; else CGROUP=cgroup/v1; fi
cat >"$CONF_DIR/cgroup.conf" <<EOF
$MARKER
CgroupPlugin=$CGROUP
IgnoreSystemd=yes
EOF

# --- 4. daemons -----------------------------------------------------------------------------------------
# munged: reuse one that already answers (e.g. a distribution service) — we then neither record nor stop it.
if ! alive munged && ! (munge -n | unmunge >/dev/null) 2>/dev/null; then
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 "$STATE/munge"
    runuser -u munge -- munged --force --pid-file="$STATE/munge/munged.pid" \
        --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/munged.seed"
    cp "$STATE/munge/munged.pid" "$PIDS/munged.pid"
fi
(munge -n | unmunge >/dev/null) || die "munge does not work (see $STATE/munge/munged.log)"

if ! alive slurmctld; then
    if alive slurmd; then  # a slurmd left from before would re-register only after ~10 s: restart it too
        pid="$(cat "$PIDS/slurmd.pid")"
        kill -TERM "$pid"
        for ((i = 0; i < 100; i++)); do [[ -e "/proc/$pid" ]] || break; sleep 0.1; done
    fi
    rm -f "$PIDS/slurmctld.pid"
    : >"$LOGS/slurmctld.log"
    slurmctld -c -i  # -c: start clean (no saved jobs), -i: ignore errors reading old state
fi
if ! alive slurmd; then
    rm -f "$PIDS/slurmd.pid"
    : >"$LOGS/slurmd.log"
    slurmd
fi

deadline=$((SECONDS + TIMEOUT))
state=""
until [[ "$state" == "idle" ]]; do
    if ((SECONDS >= deadline)); then
        echo "slurm_up: ERROR: node $NODE not idle after ${TIMEOUT}s (sinfo state: '${state:-none}')" >&2
        sinfo -N -l >&2 || true
        dump_logs
        exit 1
    fi
    for d in slurmctld slurmd; do
        if [[ -s "$PIDS/$d.pid" ]] && ! alive "$d"; then
            echo "slurm_up: ERROR: $d exited during start-up" >&2
            dump_logs
            exit 1
        fi
    done
    state="$(node_state || true)"
    # A node left "down"/"drain" by an earlier run of this script is brought back.
    if [[ "$state" =~ ^(down|drain|drained|fail)$ ]]; then
        scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true
    fi
    [[ "$state" == "idle" ]] || sleep 0.5
done
log "up: SLURM $VERSION, node $NODE (CPUs=$CPUS RealMemory=$MEM gpu:$GPU_TYPE:$N_GPUS)," \
    "partition gpu, state dir $STATE"
