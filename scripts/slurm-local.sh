#!/usr/bin/env bash
# A one-node Slurm on this machine, to try `make grade SLURM=1` without a cluster, and for the
# grader's tests of its Slurm backend (grader/tests/test_slurm.py).
#
#   scripts/slurm-local.sh start DIR   starts munged, slurmctld and slurmd with everything in DIR
#                                      (config, key, state, logs); prints the line to source
#   scripts/slurm-local.sh stop DIR    stops them; DIR is left for its logs
#
# Then, in the same shell:  export SLURM_CONF=DIR/slurm.conf  and sbatch, squeue, scancel and
# the grader's --slurm talk to it. Its node offers no GPUs as Slurm resources: ask for none
# (GRES=none), and each task sees every GPU of the machine. Needs Debian's slurm-wlm and munge (scripts/setup.sh --slurm
# installs them) and root, as slurmd starts jobs as their user. Nothing in /etc is changed: the
# daemons run with their own key and socket, so a Slurm already set up here is not touched.
set -euo pipefail

usage() {
    echo "usage: $0 start|stop DIR" >&2
    exit 2
}
[[ $# -eq 2 ]] || usage
action=$1
dir=$(realpath -m "$2")

stop() {
    local name pid
    for name in slurmd slurmctld munged; do
        [[ -f $dir/$name.pid ]] || continue
        pid=$(cat "$dir/$name.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/$name.pid"
    done
}

case $action in
stop)
    stop
    exit 0
    ;;
start) ;;
*) usage ;;
esac

for tool in munged slurmctld slurmd sbatch; do
    command -v "$tool" >/dev/null || {
        echo "$0: $tool not found: install Debian's slurm-wlm and munge (scripts/setup.sh --slurm)" >&2
        exit 1
    }
done
if [[ $(id -u) -ne 0 ]]; then
    echo "$0: run as root: slurmd starts each job as the user who submitted it" >&2
    exit 1
fi
if [[ -f $dir/slurmctld.pid ]] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    echo "$0: a Slurm of $dir is running already; stop it first: $0 stop $dir" >&2
    exit 1
fi

mkdir -p "$dir/munge" "$dir/socket" "$dir/state" "$dir/spool"
chmod 700 "$dir/munge"
chmod 755 "$dir/socket"  # every user's jobs and commands reach munged there, not its key
[[ -f $dir/munge/munge.key ]] || head -c 1024 /dev/urandom >"$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"

# Free ports for the two daemons, so that a second Slurm (another test, a real one) can coexist.
read -r ctld_port slurmd_port < <(python3 - <<'EOF'
import socket
ports = []
sockets = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    sockets.append(s)
    ports.append(s.getsockname()[1])
print(*ports)
EOF
)
node=$(hostname -s)
# The node as slurmd sees it (its CPUs and memory), less the hardware lines Slurm prints too.
hardware=$(slurmd -C | head -1 | sed -e 's/^NodeName=[^ ]* //' -e 's/ Boards=[^ ]*//')

cat >"$dir/slurm.conf" <<EOF
# A one-node Slurm written by scripts/slurm-local.sh: localhost only, no accounting database.
ClusterName=kitlocal
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/socket/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
# Finished jobs stay in squeue's view for 5 minutes (sacct needs a database this Slurm has not).
MinJobAge=300
SchedulerParameters=sched_interval=1
NodeName=$node NodeAddr=127.0.0.1 $hardware State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF

munged --force --key-file="$dir/munge/munge.key" --socket="$dir/socket/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munged.seed"
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"

# Ready when the node takes jobs: idle in sinfo (a few seconds).
for _ in $(seq 100); do
    if sinfo --noheader --format=%t 2>/dev/null | grep -qx idle; then
        echo "export SLURM_CONF=$SLURM_CONF"
        exit 0
    fi
    sleep 0.2
done
echo "$0: Slurm did not come up within 20 s; its logs: $dir/slurmctld.log, $dir/slurmd.log" >&2
stop
exit 1
