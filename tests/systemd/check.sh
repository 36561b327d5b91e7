#!/bin/sh
# Inside the Debian test system with systemd as PID 1 (systemd-host.sh): vmmd's
# packages installed, tested by autopkgtest, upgraded to a rebuild,
# removed and purged with apt, and vmmd driven through systemctl,
# journalctl and vmctl in between.  TAP on standard output (the test
# system's second serial port); the system powers off at the end.
set -u
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
n=0
failed=0
ok() {	# ok CONDITION-STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
# wait_for SECONDS COMMAND...: until it succeeds.
wait_for() {
	t=$1; shift
	while [ "$t" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
		t=$((t - 1))
	done
	return 1
}
state_is() { vmctl info "$1" 2>/dev/null | grep -qx "state: $2"; }
show() { systemctl show -p "$2" --value "$1"; }
finish() {
	echo "1..$n"
	systemctl poweroff --no-block
	exit 0
}

# The KVM modules of the test host's kernel (no modules.dep: in order).
while read -r m; do
	insmod "/usr/lib/vmmd-test/modules/$m.ko" 2>/dev/null
done </usr/lib/vmmd-test/modules/order
ok "$( [ -c /dev/kvm ]; echo $?)" "/dev/kvm exists"

# The packages, as an administrator installs them (systemd-host.sh put
# them in debs/old, and their rebuild at a newer version in debs/new).
debs=/usr/lib/vmmd-test/debs
apt_get() {
	DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Use-Pty=0 "$@"
}
(cd $debs/old && apt_get install ./vmctl.deb ./vmmd.deb) >/tmp/apt-install 2>&1
ok $? "apt install ./vmctl.deb ./vmmd.deb: $(dpkg-query -W \
    -f='${Version} ${db:Status-Status}' vmmd)"
grep -q '^Setting up vmmd' /tmp/apt-install || diag "$(tail -n 20 /tmp/apt-install)"
ok "$( [ "$(systemctl is-enabled vmmd.service vmmd.socket | tr '\n' ' ')" = \
    "enabled enabled " ]; echo $?)" "the package enabled vmmd.service and\
 vmmd.socket ($(systemctl is-enabled vmmd.service vmmd.socket | tr '\n' ' '))"
ok "$( [ "$(systemctl is-active vmmd.service)" = active ]; echo $?)" \
    "and started vmmd ($(systemctl is-active vmmd.service))"
vmctl list >/dev/null
ok $? "vmctl list is answered"
ok "$( [ -f /etc/vmmd/vmmd.conf ] &&
    grep -qx /etc/vmmd/vmmd.conf /var/lib/dpkg/info/vmmd.conffiles
    echo $?)" "/etc/vmmd/vmmd.conf is a conffile"
# The package's autopkgtests (debian/tests/control), run by autopkgtest
# against the packages just installed, with the null runner: this system
# is the testbed, a machine booted for the test alone, where the tests'
# restrictions (needs-root, isolation-machine) hold and /dev/kvm opens.
# autopkgtest serves the .debs from a repository of its own (no network
# here), reinstalls them from it and installs the tests' Depends.  Its
# exit status (0: every test passed, none skipped) is one test point,
# its summary line for each test of the control file one more.
src=/usr/lib/vmmd-test/source
(cd $debs/old && autopkgtest --no-built-binaries \
    --summary-file=/tmp/autopkgtest-summary ./vmctl.deb ./vmmd.deb \
    "$src" -- null) >/tmp/autopkgtest.log 2>&1
rc=$?
ok $rc "autopkgtest --no-built-binaries ./vmctl.deb ./vmmd.deb SOURCE -- null:\
 exit $rc"
[ $rc -eq 0 ] || diag "$(tail -n 60 /tmp/autopkgtest.log)"
for t in $(sed -n 's/^Tests://p' "$src/debian/tests/control" | tr ',' ' '); do
	line=$(awk -v t="$t" '$1 == t' /tmp/autopkgtest-summary 2>/dev/null)
	ok "$(case $(echo $line | cut -d ' ' -f 2) in PASS) echo 0 ;;
	    *) echo 1 ;; esac)" "autopkgtest summary: $(echo ${line:-$t missing})"
done
# Socket activation from here on: both stopped, the socket started alone.
systemctl stop vmmd.service vmmd.socket

getent group vmm >/dev/null
ok $? "systemd-sysusers made group vmm"
# The workers' uids (worker_uids, 90000-99999 by default) stay free:
# systemd-sysusers made no user or group there.
getent passwd | awk -F: '$3 >= 90000 && $3 <= 99999 { bad = 1 } END { exit bad }' &&
    getent group | awk -F: '$3 >= 90000 && $3 <= 99999 { bad = 1 } END { exit bad }'
ok $? "no user or group in the workers' uids 90000-99999"
tasks=$(show vmmd TasksMax)
ok "$(case $tasks in ''|infinity) echo 1 ;; *) echo 0 ;; esac)" \
    "the unit bounds its tasks (TasksMax: $tasks)"
systemd-analyze verify --man=no vmmd.socket vmmd.service >/tmp/verify 2>&1
rc=$?
[ -s /tmp/verify ] && rc=1
ok $rc "systemd-analyze verify vmmd.socket vmmd.service: clean"
[ -s /tmp/verify ] && diag "$(cat /tmp/verify)"
score=$(systemd-analyze security vmmd.service 2>/dev/null |
    sed -n 's/.*Overall exposure level for vmmd.service: \([0-9.]*\).*/\1/p')
ok "$(awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 2.5) }'; echo $?)" \
    "systemd-analyze security vmmd.service: $score (at most 2.5)"

systemctl start vmmd.socket
ok $? "systemctl start vmmd.socket"
ok "$( [ "$(stat -c '%a %U %G' /run/vmmd/control.sock)" = "660 root vmm" ]
    echo $?)" "the socket is 0660 root:vmm ($(stat -c '%a %U %G' \
    /run/vmmd/control.sock))"
ok "$( [ "$(systemctl is-active vmmd.service)" = inactive ]; echo $?)" \
    "vmmd.service waits for its first client"
vmctl list >/dev/null
ok $? "the first vmctl call is answered"
ok "$( [ "$(systemctl is-active vmmd.service)" = active ]; echo $?)" \
    "and activated vmmd.service"
# The socket's group decides who may drive vmmd: nobody is refused,
# nobody in group vmm is answered.
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups vmctl list 2>&1)
rc=$?
# vmctl names the group that would let the user in.
case $rc:$out in 0:*) rc=1 ;; *"Permission denied"*"group vmm"*) rc=0 ;;
*) rc=1 ;; esac
ok $rc "a user outside group vmm is refused ($out)"
setpriv --reuid=nobody --regid=nogroup --groups=vmm vmctl list >/dev/null 2>&1
ok $? "the same user in group vmm is answered"

vmctl create plain >/dev/null && vmctl create auto >/dev/null &&
    vmctl autostart auto on >/dev/null
ok $? "two VMs of the demo guest, one with autostart"
vmctl start plain >/dev/null
ok $? "vmctl start plain: the guest boots"
wait_for 60 grep -q " UTC" /var/lib/vmmd/console/plain.log
ok $? "plain: the demo guest ticks on its console"
# The worker under the unit's capabilities and system call filter could
# still enter its sandbox: a uid of its own (and the gid of that number,
# no other groups), seccomp filtering, no capability, bounded tasks.
pid_of() { vmctl info "$1" 2>/dev/null | sed -n 's/^pid: *\([0-9]*\).*/\1/p'; }
uid_of() { awk '/^Uid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
plain_pid=$(pid_of plain)
ok "$( [ -n "$plain_pid" ] &&
    awk '/^Uid:/ { u = $2; uok = ($2 >= 90000 && $2 <= 99999 &&
    $3 == $2 && $4 == $2 && $5 == $2) } /^Gid:/ { g = ($2 == u && $3 == u) }
    /^Groups:/ { gr = (NF == 1) }
    /^Seccomp:/ { s = ($2 == 2) } /^CapEff:/ { c = ($2 ~ /^0+$/) }
    END { exit !(uok && g && gr && s && c) }' "/proc/$plain_pid/status"
    echo $?)" "plain: its worker runs as uid $(uid_of "$plain_pid") of\
 90000-99999 (gid the same, no groups), seccomp on, no capability"
maxtasks=$(awk '/^Max processes/ { print $3 }' "/proc/$plain_pid/limits")
ok "$(case $maxtasks in ''|unlimited) echo 1 ;; *) echo 0 ;; esac)" \
    "plain: its tasks are bounded (RLIMIT_NPROC $maxtasks)"
status=$(show vmmd StatusText)
ok "$(case $status in *"1 guest running"*) echo 0 ;; *) echo 1 ;; esac)" \
    "systemctl status: '$status'"
journalctl -u vmmd VM=plain -o cat >/tmp/jvm 2>&1
ok "$(grep -q "VM 'plain': starting -> running: booted" /tmp/jvm; echo $?)" \
    "journalctl -u vmmd VM=plain shows its lines"
journalctl -u vmmd -p info -o verbose VM=plain 2>/dev/null |
    grep -q 'PRIORITY=6'
ok $? "with their priority"
# The worker's own lines, sent to the journal by the worker itself.
journalctl VM=plain _COMM=vmmd-worker -o cat >/tmp/jwk 2>&1
ok "$(grep -q 'plain: guest running' /tmp/jwk; echo $?)" \
    "journalctl VM=plain shows the worker's own lines"
journalctl VM=plain _COMM=vmmd-worker -o verbose 2>/dev/null |
    grep -q '_SYSTEMD_UNIT=vmmd.service'
ok $? "as the service's, from the worker's sandbox"

# A forced stop kills a worker that runs as another user: the unit must
# leave vmmd CAP_KILL.
vmctl create forced >/dev/null && vmctl start forced >/dev/null
ok $? "forced: started"
ok "$( u=$(uid_of "$(pid_of forced)"); [ -n "$u" ] &&
    [ "$u" != "$(uid_of "$plain_pid")" ]; echo $?)" \
    "forced: a uid of its own ($(uid_of "$(pid_of forced)"), plain's is\
 $(uid_of "$plain_pid"))"
forced_pid=$(pid_of forced)
vmctl stop --force forced >/dev/null
ok "$(wait_for 10 state_is forced stopped; echo $?)" \
    "vmctl stop --force: stopped ($(vmctl info forced 2>/dev/null |
    sed -n 's/^state: //p'))"
ok "$( [ -n "$forced_pid" ] && ! kill -0 "$forced_pid" 2>/dev/null
    echo $?)" "its worker $forced_pid is gone"
journalctl -u vmmd -o cat | grep 'cannot kill worker' >/tmp/jk
ok "$( [ ! -s /tmp/jk ]; echo $?)" "no kill refused $(head -n 1 /tmp/jk)"
vmctl delete forced >/dev/null 2>&1
plain_pid=$(pid_of plain)
systemctl restart vmmd
ok $? "systemctl restart vmmd"
wait_for 60 state_is auto running
ok $? "auto: started by the new vmmd (autostart)"
ok "$( state_is plain running && [ -n "$plain_pid" ] &&
    [ "$(pid_of plain)" = "$plain_pid" ]; echo $?)" \
    "plain: still running in worker $plain_pid, adopted ($(pid_of plain))"
# The adopted worker's own lines still go to the journal with VM=: it
# logs that the new vmmd took it over.
ok "$(wait_for 10 sh -c "journalctl VM=plain _COMM=vmmd-worker -o cat |
    grep -q 'took over'"; echo $?)" "plain: its worker's lines under the\
 new vmmd in the journal with VM=plain ($(journalctl VM=plain \
    _COMM=vmmd-worker -o cat 2>/dev/null | grep 'took over' | tail -n 1))"
# The new vmmd knows the adopted worker's uid: auto got another one.
ok "$( u=$(uid_of "$(pid_of auto)"); [ -n "$u" ] &&
    [ "$u" != "$(uid_of "$plain_pid")" ]; echo $?)" \
    "auto: a uid of its own ($(uid_of "$(pid_of auto)"), adopted plain's\
 is $(uid_of "$plain_pid"))"
ok "$( ! grep -q 'ctrl-alt-del received' /var/lib/vmmd/console/plain.log
    echo $?)" "plain was not shut down on the way"
journalctl -u vmmd -o cat | grep 'systemd restarts vmmd' >/tmp/jr
ok $? "journal: $(head -n 1 /tmp/jr)"
vmctl info auto >/tmp/info 2>&1
ok "$(grep -q '^autostart: yes' /tmp/info; echo $?)" \
    "auto: its definition kept"
lines=$(wc -l </var/lib/vmmd/console/plain.log)
wait_for 30 sh -c "[ \$(wc -l </var/lib/vmmd/console/plain.log) -gt $lines ]"
ok $? "plain: its console still logged by the new vmmd"
systemctl try-restart vmmd
ok "$( [ $? -eq 0 ] && wait_for 60 state_is plain running &&
    [ "$(pid_of plain)" = "$plain_pid" ]; echo $?)" \
    "systemctl try-restart vmmd: plain kept too"

# The package upgraded under a running guest: its postinst restarts
# vmmd (dh_installsystemd's restart after the upgrade), the new vmmd
# adopts plain with its worker, uptime and console.
uptime_of() {	# seconds, from "uptime: [D d ]HH:MM:SS"
	vmctl info "$1" 2>/dev/null | awk '/^uptime:/ {
	    d = 0; t = $2; if ($3 == "d") { d = $2; t = $4 }
	    split(t, a, ":"); print d * 86400 + a[1] * 3600 + a[2] * 60 + a[3] }'
}
restarts() { journalctl -u vmmd -o cat | grep -c 'systemd restarts vmmd'; }
# A guest with a screen, for the display across the upgrade.
ihdr() { dd if="$1" bs=1 skip=16 count=8 2>/dev/null | od -An -tx1; }
vmctl create scr --vnc auto --display 640x480 >/dev/null &&
    vmctl start scr >/dev/null &&
    wait_for 60 grep -q ' UTC' /var/lib/vmmd/console/scr.log &&
    vmctl screenshot scr /tmp/scr-before.png >/dev/null
ok $? "scr: a guest with a screen, a screenshot taken"
display_before=$(vmctl display scr 2>&1)
plain_pid=$(pid_of plain)
up_before=$(uptime_of plain)
vmmd_before=$(show vmmd MainPID)
restarts_before=$(restarts)
lines=$(wc -l </var/lib/vmmd/console/plain.log)
ok "$( ! vmctl info plain | grep -q '^worker:'; echo $?)" \
    "plain: vmctl info does not call its worker replaced before the upgrade"
(cd $debs/new && apt_get install ./vmctl.deb ./vmmd.deb) >/tmp/apt-upgrade 2>&1
rc=$?
ver=$(dpkg-query -W -f='${Version}' vmmd)
ok "$( [ $rc -eq 0 ] && [ "$ver" = "$(dpkg-deb -f $debs/new/vmmd.deb \
    Version)" ]; echo $?)" "apt install ./vmmd.deb (the rebuild): $ver"
grep -q '^Setting up vmmd' /tmp/apt-upgrade || diag "$(tail -n 20 /tmp/apt-upgrade)"
wait_for 60 state_is plain running
up_after=$(uptime_of plain)
ok "$( [ -n "$plain_pid" ] && [ "$(pid_of plain)" = "$plain_pid" ]
    echo $?)" "plain: adopted in the same worker (pid before $plain_pid,\
 after $(pid_of plain))"
ok "$( [ -n "$up_before" ] && [ -n "$up_after" ] &&
    [ "$up_after" -ge "$up_before" ]; echo $?)" \
    "plain: its uptime went on (before ${up_before}s, after ${up_after}s)"
ok "$( [ "$(show vmmd MainPID)" != "$vmmd_before" ] &&
    [ "$(systemctl is-active vmmd)" = active ] &&
    [ "$(restarts)" -gt "$restarts_before" ]; echo $?)" \
    "vmmd restarted by the upgrade, not stopped (pid $vmmd_before, now\
 $(show vmmd MainPID))"
ok "$( ! grep -q 'ctrl-alt-del received' /var/lib/vmmd/console/plain.log
    echo $?)" "plain was not shut down on the way"
wait_for 30 sh -c "[ \$(wc -l </var/lib/vmmd/console/plain.log) -gt $lines ]"
ok $? "plain: its console still logged by the new vmmd"
# The worker runs the binary it started with until the guest's next
# start: dpkg replaced the file under it.
exe=$(readlink "/proc/$plain_pid/exe")
ok "$(case $exe in *" (deleted)") echo 0 ;; *) echo 1 ;; esac)" \
    "plain: its worker still runs the old binary ($exe)"
display_after=$(vmctl display scr 2>&1)
vmctl screenshot scr /tmp/scr-after.png >/dev/null
ok "$( [ $? -eq 0 ] && [ -n "$display_before" ] &&
    [ "$display_after" = "$display_before" ] &&
    [ "$(ihdr /tmp/scr-after.png)" = "$(ihdr /tmp/scr-before.png)" ]
    echo $?)" "scr: its screen intact, the same display ($(echo \
    $display_after)) and a screenshot of the same size"
vmctl stop --force scr >/dev/null 2>&1
wait_for 10 state_is scr stopped
vmctl delete --remove-data scr >/dev/null 2>&1
info=$(vmctl info plain | grep '^worker:')
ok "$(case $info in "worker: replaced since it started"*) echo 0 ;;
    *) echo 1 ;; esac)" "and vmctl info says so ($info)"

# A writable disk outside /var/lib/vmmd is read-only under the unit's
# ProtectSystem=strict: the error says so and how to allow it, and a
# drop-in with ReadWritePaths= does.
mkdir -p /srv/vmmd-disks && truncate -s 1M /srv/vmmd-disks/d.img
out=$(vmctl create rw --boot kernel --disk /srv/vmmd-disks/d.img 2>&1)
case $out in *"read-only file system"*"ReadWritePaths="*) rc=0 ;;
*) rc=1 ;; esac
ok $rc "a disk in /srv: refused under the unit, saying how ($out)"
mkdir -p /run/systemd/system/vmmd.service.d
printf '[Service]\nReadWritePaths=/srv/vmmd-disks\n' \
    >/run/systemd/system/vmmd.service.d/disks.conf
systemctl daemon-reload && systemctl restart vmmd
vmctl create rw --boot kernel --disk /srv/vmmd-disks/d.img >/dev/null &&
    vmctl start rw >/dev/null
ok $? "with ReadWritePaths=/srv/vmmd-disks in a drop-in it starts"
vmctl stop --force rw >/dev/null 2>&1
wait_for 10 state_is rw stopped
vmctl delete rw >/dev/null 2>&1

# User-mode networking: passt needs netlink and namespaces, which the
# unit does not give; the error says so and where to look, and the
# drop-in vmmd(8) shows gives them (the score above stays the unit's).
# passt takes its addresses from an interface with a default route:
# this system has no network, so a TAP stands in for one.
ip tuntap add dev vmmdup0 mode tap && ip link set vmmdup0 up &&
    ip addr add 192.168.77.2/24 dev vmmdup0 &&
    ip route add default via 192.168.77.1
ok $? "an uplink for passt: vmmdup0, a default route through it"
vmctl create un --net user,forward=tcp:127.0.0.1:2222:22 >/dev/null
out=$(vmctl start un 2>&1)
case $out in *"User-mode networking"*"vmmd(8)"*) rc=0 ;; *) rc=1 ;; esac
ok $rc "user-mode networking refused under the unit, saying where ($out)"
cp "$(ls /usr/local/share/vmmd/vmmd-user-net.conf \
    /usr/share/vmmd/vmmd-user-net.conf 2>/dev/null | head -n 1)" \
    /run/systemd/system/vmmd.service.d/usernet.conf
systemctl daemon-reload && systemctl restart vmmd
out=$(vmctl start un 2>&1)
ok $? "with vmmd(8)'s drop-in it starts ($out)"
un_pid=$(pid_of un)
passt_pid=$(for p in /proc/[0-9]*; do
	# passt runs as passt.avx2 where the CPU has AVX2.
	case $(cat "$p/comm" 2>/dev/null) in passt|passt.avx2) ;; *) continue ;;
	esac
	awk -v w="$un_pid" '{ sub(/.*\) /, ""); if ($2 == w) print FILENAME }' \
	    "$p/stat"
done | sed 's|/proc/||; s|/stat||' | head -n 1)
ok "$( [ -n "$passt_pid" ] && [ "$(uid_of "$passt_pid")" = \
    "$(uid_of "$un_pid")" ]; echo $?)" \
    "passt ($passt_pid) runs as the guest's uid ($(uid_of "$un_pid"))"
# 127.0.0.1:2222, listening (state 0A), in the kernel's table.
grep -q '^ *[0-9]*: 0100007F:08AE 00000000:0000 0A' /proc/net/tcp
ok $? "and listens on 127.0.0.1:2222 for the forward"
vmctl stop --force un >/dev/null 2>&1
wait_for 10 state_is un stopped
ok "$( [ -n "$passt_pid" ] && wait_for 10 sh -c "! kill -0 $passt_pid"
    echo $?)" "passt ended with the guest"
vmctl delete un >/dev/null 2>&1
rm -f /run/systemd/system/vmmd.service.d/usernet.conf
systemctl daemon-reload

# The OCF resource agent as Pacemaker runs it (ocf_vmmd_vm(7)), installed
# where Pacemaker looks, on this vmmd: Debian's ocf-tester, then a
# systemctl restart of vmmd under its running guest, which must never
# look like a failed guest to a monitor.
agent=/usr/lib/ocf/resource.d/vmmd/vm
printf '{"name": "ha", "memory_mib": 32}\n' >/tmp/ha.json
ocf-tester -n ha -o config=/tmp/ha.json "$agent" >/tmp/ocft 2>&1
ok $? "ocf-tester on ocf:vmmd:vm: $(tail -n 1 /tmp/ocft)"
grep -q 'passed all tests' /tmp/ocft || diag "$(cat /tmp/ocft)"
export OCF_ROOT=/usr/lib/ocf OCF_RESKEY_config=/tmp/ha.json \
    OCF_RESKEY_CRM_meta_timeout=60000 OCF_RESKEY_CRM_meta_interval=0
"$agent" monitor 2>/dev/null
ok "$( [ $? -eq 7 ]; echo $?)" "agent: a probe of a guest never seen is 7"
OCF_RESKEY_CRM_meta_interval=10000
"$agent" start 2>/dev/null && state_is ha running &&
    vmctl export ha | grep -q '"managed": "cluster"'
ok $? "agent: start, the VM the cluster's"
"$agent" start 2>/dev/null
ok $? "agent: start again"
systemctl restart vmmd &
restart=$!
rc=0
monitors=0
while kill -0 "$restart" 2>/dev/null; do
	"$agent" monitor 2>/dev/null || rc=$?
	monitors=$((monitors + 1))
done
wait "$restart"
"$agent" monitor 2>/dev/null || rc=$?
ok "$rc" "agent: $monitors monitors while vmmd restarted, one after: 0"
"$agent" stop 2>/dev/null && state_is ha stopped
ok $? "agent: stop"
"$agent" stop 2>/dev/null
ok $? "agent: stop again"
"$agent" monitor 2>/dev/null
ok "$( [ $? -eq 7 ]; echo $?)" "agent: monitor of the stopped guest is 7"
vmctl delete ha >/dev/null 2>&1
unset OCF_ROOT OCF_RESKEY_config OCF_RESKEY_CRM_meta_timeout \
    OCF_RESKEY_CRM_meta_interval

systemctl stop vmmd
ok $? "systemctl stop vmmd"
ok "$( [ "$(show vmmd Result)" = success ] &&
    [ "$(show vmmd ExecMainStatus)" = 0 ]; echo $?)" \
    "vmmd exited 0 ($(show vmmd Result), $(show vmmd ExecMainStatus))"
grep -q 'ctrl-alt-del received' /var/lib/vmmd/console/auto.log
ok $? "auto was shut down gracefully"
grep -q 'ctrl-alt-del received' /var/lib/vmmd/console/plain.log
ok $? "and plain, adopted twice, too"
ok "$( ! grep -qx vmmd-worker /proc/[0-9]*/comm 2>/dev/null; echo $?)" \
    "no worker is left"

# The watchdog, quicker than the unit's 60 s for the test.
mkdir -p /run/systemd/system/vmmd.service.d
printf '[Service]\nWatchdogSec=4s\n' \
    >/run/systemd/system/vmmd.service.d/watchdog.conf
systemctl daemon-reload
systemctl start vmmd
pid=$(show vmmd MainPID)
sleep 6
ok "$( [ "$(show vmmd MainPID)" = "$pid" ]; echo $?)" \
    "a vmmd that pings lives on"
kill -STOP "$pid"
wait_for 60 sh -c "[ \"\$(systemctl show -p MainPID --value vmmd)\" != \
    $pid ] && [ \"\$(systemctl show -p MainPID --value vmmd)\" != 0 ]"
ok $? "a vmmd that hangs is restarted by the watchdog"
journalctl -u vmmd -o cat | grep -i 'watchdog timeout' >/tmp/wd
ok $? "journal: $(head -n 1 /tmp/wd)"
wait_for 60 state_is auto running
ok $? "and the restarted vmmd starts auto again"
systemctl stop vmmd
ok "$( [ "$(show vmmd Result)" = success ]; echo $?)" \
    "then stops cleanly"

# apt remove: the daemon stopped, its guests shut down, its files gone
# but for the conffile; definitions and console logs kept.  apt purge:
# those removed too, after saying so.  Group vmm stays, as Debian keeps
# the system groups of removed packages.
systemctl start vmmd && wait_for 60 state_is auto running
cads=$(grep -c 'ctrl-alt-del received' /var/lib/vmmd/console/auto.log)
dpkg -L vmmd >/tmp/vmmd.files
apt_get remove vmmd >/tmp/apt-remove 2>&1
ok $? "apt remove vmmd: $(dpkg-query -W -f='${db:Status-Status}' vmmd)"
ok "$( [ "$(systemctl is-active vmmd.service)" != active ] &&
    [ "$(systemctl is-active vmmd.socket)" != active ]; echo $?)" \
    "vmmd.service and vmmd.socket stopped"
[ "$(grep -c 'ctrl-alt-del received' /var/lib/vmmd/console/auto.log)" \
    -gt "$cads" ] && ! grep -qx vmmd-worker /proc/[0-9]*/comm 2>/dev/null
ok $? "its guests shut down, no worker left"
left=$(while read -r f; do
	[ -d "$f" ] || [ ! -e "$f" ] || [ "$f" = /etc/vmmd/vmmd.conf ] ||
	    echo "$f"
done </tmp/vmmd.files)
ok "$( [ -z "$left" ]; echo $?)" "its files are gone, the conffile kept\
 ${left:+(left: $(echo $left))}"
ok "$( [ -f /var/lib/vmmd/vms/auto.json ] && [ -f /var/lib/vmmd/vms/plain.json ] &&
    [ -f /var/lib/vmmd/console/auto.log ] && [ -f /etc/vmmd/vmmd.conf ]
    echo $?)" "kept: the definitions, console logs and /etc/vmmd/vmmd.conf"
ok "$( command -v vmctl >/dev/null; echo $?)" "vmctl stays installed"
apt_get purge vmmd >/tmp/apt-purge 2>&1
ok $? "apt purge vmmd: $(dpkg-query -W -f='${db:Status-Status}' vmmd \
    2>/dev/null || echo gone)"
ok "$(grep -q 'purge removes /var/lib/vmmd' /tmp/apt-purge; echo $?)" \
    "purge says what it removes: $(grep 'purge removes' /tmp/apt-purge)"
ok "$( [ ! -e /var/lib/vmmd ] && [ ! -e /etc/vmmd ] && [ ! -e /run/vmmd ]
    echo $?)" "/var/lib/vmmd, /etc/vmmd and /run/vmmd are gone"
ok "$( ! ls /etc/systemd/system/*/vmmd.* >/dev/null 2>&1; echo $?)" \
    "no unit of vmmd is left enabled ($(echo \
    $(ls /etc/systemd/system/*/vmmd.* 2>/dev/null)))"
finish
