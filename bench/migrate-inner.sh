#!/bin/sh
# Runs inside the nested test host (see migrate.sh): for each size and
# each guest (idle: the demo guest; busy: the dirty guest), a migration
# between two vmmd and one between two QEMU.  Prints TAP comments, the
# table and one test point, for run.sh.
set -u
. "$(dirname "$0")/nested-lib.sh"

busy_mib=${BENCH_BUSY_MIB:-32}
limit=300
res=/tmp/mb.res
: >"$res"
ok=1

# The two daemons: vmmd trusts only directories no one else may write.
for s in a b; do
	mkdir -p -m 700 /tmp/mb-$s
	"$VMMD_BIN" -s /tmp/mb-$s/control.sock -d /tmp/mb-$s \
	    -g "$VMMD_GUEST_DEMO"
	wait_socket /tmp/mb-$s/control.sock 30 ||
	    { echo "Bail out! vmmd $s did not start"; exit 1; }
done
ctl() { s=$1; shift; "$VMCTL_BIN" -s /tmp/mb-$s/control.sock "$@"; }

# guest KIND: the kernel and command line of that kind.
kernel() { [ "$1" = idle ] && echo "$VMMD_GUEST_DEMO" || echo "$BENCH_DIRTY"; }
cmdline() { [ "$1" = idle ] && echo "" || echo "mib=$busy_mib every=20"; }
# The line a running guest of that kind prints again and again (idle:
# none; its console is quiet).
running() { [ "$1" = idle ] && echo "" || echo "dirty: pass"; }

# vmmd_one MIB KIND: a guest started on a, migrated to b.
vmmd_one() {
	mib=$1 kind=$2 name=g$1$2
	ctl a create "$name" --kernel "$(kernel "$kind")" \
	    --cmdline "$(cmdline "$kind")" --memory "${mib}M" >/dev/null &&
	    ctl a start "$name" >/dev/null ||
	    { ok=0; say "vmmd $mib $kind: did not start"; return; }
	[ "$kind" = idle ] || wait_for /tmp/mb-a/console/$name.log \
	    "dirty: pass" 300 || { ok=0; say "vmmd $mib $kind: no pass"; }
	sleep 2
	out=$(timeout $((limit + 60)) "$VMCTL_BIN" -s /tmp/mb-a/control.sock \
	    migrate "$name" --to unix:/tmp/mb-b/control.sock --downtime 300 \
	    --watch 2>&1)
	say "vmmd $mib $kind: $(echo "$out" | tail -n 1)"
	echo "$out" | grep ' round ' | tail -n 3 | while read -r l; do
		say "    $l"
	done
	line=$(echo "$out" | grep ': migrated to ' | tail -n 1)
	if [ -n "$line" ]; then
		set -- $(echo "$line" | sed 's/.*: \([0-9]*\) rounds, \([0-9]*\) pages, \([0-9]*\) bytes in \([0-9]*\) ms, downtime \([0-9]*\) ms.*/\1 \2 \3 \4 \5/')
		echo "vmmd $mib $kind $1 $2 $3 $4 $5" >>"$res"
		if [ "$kind" = busy ]; then
			n0=$(grep -c "dirty: pass" /tmp/mb-b/console/$name.log)
			sleep 3
			n1=$(grep -c "dirty: pass" /tmp/mb-b/console/$name.log)
			grep -q FAIL /tmp/mb-b/console/$name.log && ok=0
			[ "$n1" -gt "$n0" ] || { ok=0; say "vmmd $mib $kind:" \
			    "the guest does not run on at the target"; }
		fi
	else
		ok=0
		echo "vmmd $mib $kind - - - - -" >>"$res"
	fi
	ctl b stop --force "$name" >/dev/null 2>&1
	ctl a stop --force "$name" >/dev/null 2>&1
	ctl b delete "$name" >/dev/null 2>&1
	ctl a delete "$name" >/dev/null 2>&1
}

# qemu_start NAME MIB KIND [ARGS...]: a QEMU whose monitor reads
# /tmp/NAME.in (a FIFO held open on fd 4 or 5) and writes /tmp/NAME.out.
qemu_start() {
	n=$1 mib=$2 kind=$3
	shift 3
	rm -f /tmp/$n.in /tmp/$n.out /tmp/$n.con
	mkfifo /tmp/$n.in
	qemu-system-x86_64 -enable-kvm -cpu host -M pc -m "$mib" -smp 1 \
	    -nodefaults -display none -monitor stdio \
	    -serial file:/tmp/$n.con -kernel "$(kernel "$kind")" \
	    -append "$(cmdline "$kind")" "$@" \
	    </tmp/$n.in >/tmp/$n.out 2>&1 &
}

# qemu_info: "info migrate" of the source, into /tmp/qs.info.
qemu_info() {
	: >/tmp/qs.out
	echo "info migrate" >&4
	sleep 1
	cp /tmp/qs.out /tmp/qs.info
}

qval() { sed -n "s/^$1: \([0-9]*\).*/\1/p" /tmp/qs.info | tail -n 1; }

# qemu_one MIB KIND: the same with two QEMU.
qemu_one() {
	mib=$1 kind=$2
	qemu_start qs "$mib" "$kind"
	src=$!
	exec 4>/tmp/qs.in
	rm -f /tmp/qm.sock
	qemu_start qt "$mib" "$kind" -incoming unix:/tmp/qm.sock
	dst=$!
	exec 5>/tmp/qt.in
	# Migrating before the target listens fails at once.
	wait_socket /tmp/qm.sock 120 ||
	    { ok=0; say "qemu $mib $kind: the target does not listen"; }
	[ "$kind" = idle ] || wait_for /tmp/qs.con "dirty: pass" 300 ||
	    { ok=0; say "qemu $mib $kind: no pass"; }
	sleep 2
	echo "migrate_set_parameter downtime-limit 300" >&4
	echo "migrate -d unix:/tmp/qm.sock" >&4
	i=0 st=
	while [ $i -lt $limit ]; do
		sleep 1
		i=$((i + 1))
		qemu_info
		st=$(sed -n 's/^Migration status: \([a-z-]*\).*/\1/p' \
		    /tmp/qs.info | tail -n 1)
		case $st in completed|failed|cancelled) break ;; esac
	done
	if [ "$st" = completed ]; then
		rounds=$(qval "dirty sync count")
		normal=$(qval "normal")
		dup=$(qval "duplicate")
		kb=$(qval "transferred ram")
		total=$(qval "total time")
		down=$(qval "downtime")
		say "qemu $mib $kind: completed: $rounds dirty syncs," \
		    "$normal normal and $dup duplicate (zero) pages," \
		    "$kb kbytes in $total ms, downtime $down ms"
		echo "qemu $mib $kind $rounds $((normal + dup)) $((kb * 1024))" \
		    "$total $down" >>"$res"
		if [ "$kind" = busy ]; then
			n0=$(grep -c "dirty: pass" /tmp/qt.con)
			sleep 3
			n1=$(grep -c "dirty: pass" /tmp/qt.con)
			grep -q FAIL /tmp/qt.con && ok=0
			[ "$n1" -gt "$n0" ] || { ok=0; say "qemu $mib $kind:" \
			    "the guest does not run on at the target"; }
		fi
	else
		say "qemu $mib $kind: ${st:-no status} after $i s;" \
		    "$(tr '\n' ' ' </tmp/qs.info | cut -c1-300)"
		[ "$st" = failed ] && ok=0
		echo "migrate_cancel" >&4
		echo "qemu $mib $kind - - - - -" >>"$res"
	fi
	echo quit >&4
	echo quit >&5
	exec 4>&- 5>&-
	stop_pid "$src"
	stop_pid "$dst"
}

say "live migration: guests of $BENCH_SIZES MiB, idle (demo) and busy" \
    "(dirty, writing $busy_mib MiB), 1 vCPU, downtime bound 300 ms"
for mib in $BENCH_SIZES; do
	for kind in idle busy; do
		vmmd_one "$mib" "$kind"
		qemu_one "$mib" "$kind"
	done
done
for s in a b; do
	kill "$(cat /tmp/mb-$s/vmmd.pid 2>/dev/null)" 2>/dev/null
done

say ""
say "rounds (QEMU: dirty syncs), pages and MiB sent, total and downtime"
say "(ms); times in the test host are emulated: compare the two VMMs"
say ""
awk '
	{ k = $2 " " $3; if (!seen[k]++) order[n++] = k
	  r[$1, k] = $4; p[$1, k] = $5; b[$1, k] = $6; t[$1, k] = $7
	  d[$1, k] = $8 }
	function mb(x) { return x == "-" ? "-" : sprintf("%.1f", x / 1048576) }
	END {
		printf "# %-11s %6s %6s %8s %8s %7s %7s %7s %7s %6s %6s\n",
		    "guest", "rounds", "", "pages", "", "MiB", "", "total",
		    "", "down", ""
		printf "# %-11s %6s %6s %8s %8s %7s %7s %7s %7s %6s %6s\n",
		    "MiB kind", "vmmd", "qemu", "vmmd", "qemu", "vmmd",
		    "qemu", "vmmd", "qemu", "vmmd", "qemu"
		for (i = 0; i < n; i++) {
			k = order[i]
			printf "# %-11s %6s %6s %8s %8s %7s %7s %7s %7s %6s %6s\n",
			    k, r["vmmd", k], r["qemu", k], p["vmmd", k],
			    p["qemu", k], mb(b["vmmd", k]), mb(b["qemu", k]),
			    t["vmmd", k], t["qemu", k], d["vmmd", k],
			    d["qemu", k]
		}
	}' "$res"
[ $ok = 1 ] && echo "ok 1 - every migration ended with the guest running at the target" ||
    echo "not ok 1 - a migration failed or a guest did not run on (see above)"
echo "1..1"
