#!/bin/bash
# vmctl's bash completion against the vmctl just built and a vmmd with
# two VMs (no guest runs: no KVM needed), and zsh's parsing its own.
# DEMO is the daemon's default guest (-g), never run.
#   completion.sh VMMD VMCTL BASH_COMPLETION ZSH_COMPLETION DEMO
set -u
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
vmmd=$(abs "$1") vmctl=$(abs "$2") bashcomp=$3 zshcomp=$4 demo=$(abs "$5")
[ -r /usr/share/bash-completion/bash_completion ] || {
	echo '1..0 # SKIP bash-completion is not installed'; exit 0; }
dir=$(mktemp -d) || exit 1
pid=
trap '[ -n "$pid" ] && kill $pid; rm -rf "$dir"' EXIT
mkdir "$dir/bin"
ln -s "$vmctl" "$dir/bin/vmctl"
PATH=$dir/bin:$PATH

"$vmmd" -f -c /dev/null -s "$dir/sock" -d "$dir/state" -g "$demo" \
    2>"$dir/log" &
pid=$!
for _ in $(seq 50); do vmctl -s "$dir/sock" list >/dev/null 2>&1 && break
	sleep 0.1; done
vmctl -s "$dir/sock" create web >/dev/null &&
    vmctl -s "$dir/sock" create db >/dev/null ||
    { echo "Bail out! vmmd does not answer"; cat "$dir/log"; exit 1; }

. /usr/share/bash-completion/bash_completion
. "$bashcomp"

n=0
# expect "WORDS" "WANTED (sorted, space-separated)"
expect() {
	local got
	read -ra COMP_WORDS <<<"$1"
	case $1 in *' ') COMP_WORDS+=("") ;; esac
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$1 COMP_POINT=${#1}
	COMPREPLY=()
	_vmctl vmctl "${COMP_WORDS[COMP_CWORD]}" \
	    "${COMP_WORDS[COMP_CWORD - 1]}"
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')
	got=${got% }
	n=$((n + 1))
	if [ "$got" = "$2" ]; then
		echo "ok $n - '$1': $got"
	else
		echo "not ok $n - '$1': '$got', wanted '$2'"
	fi
}

expect "vmctl st" "start state stats stop"
expect "vmctl -s $dir/sock auto" "autostart"
expect "vmctl -s $dir/sock start " "db web"
expect "vmctl --socket=$dir/sock info w" "web"
expect "vmctl -s $dir/sock info --s" "--socket --stats"
expect "vmctl -s $dir/sock autostart web " "off on"
expect "vmctl -s $dir/sock create x --on-reboot " "restart stop"
expect "vmctl -s $dir/sock create x --memory " ""
expect "vmctl -s $dir/sock stop --timeout 5 " "db web"
expect "vmctl -s $dir/sock stop --f" "--force"
expect "vmctl help aut" "autostart"
expect "vmctl -s $dir/sock clone " "db web"
expect "vmctl -s $dir/sock delete --r" "--remove-data"
expect "vmctl -s $dir/sock list " ""
expect "vmctl -s $dir/sock delete web " "db web"
expect "vmctl -s $dir/sock stop db --force w" "web"
expect "vmctl -s $dir/sock info web " ""
expect "vmctl -s $dir/sock events " "db web"
expect "vmctl -s $dir/sock list --state r" "running"

n=$((n + 1))
if ! command -v zsh >/dev/null 2>&1; then
	echo "ok $n # SKIP zsh is not installed"
elif out=$(zsh -n "$zshcomp" 2>&1); then
	echo "ok $n - zsh parses _vmctl"
else
	echo "not ok $n - zsh: $out"
fi
echo "1..$n"
