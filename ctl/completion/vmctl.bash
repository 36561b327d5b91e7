# bash completion for vmctl(1): commands, their options and VM names.
# Everything is asked of vmctl itself ("vmctl help", "vmctl help
# COMMAND", "vmctl list"), so that it never lags behind the program.

# The words of "vmctl help"'s command list.
_vmctl_commands()
{
	vmctl help 2>/dev/null |
	    awk '/^Commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 }
		c && /^$/ { exit }'
}

# The names of the VMs of the daemon on the socket in "$@" (-s PATH).
_vmctl_names()
{
	vmctl "$@" list 2>/dev/null | awk 'NR > 1 { print $1 }'
}

_vmctl()
{
	local cur prev words cword
	_init_completion || return

	local i cmd="" usage="" valopts="" npos=0 sock=()
	for ((i = 1; i < cword; i++)); do
		if [[ -z $cmd ]]; then
			case ${words[i]} in
			-s | --socket) sock=(-s "${words[i + 1]}"); ((i++)) ;;
			--socket=*) sock=(-s "${words[i]#--socket=}") ;;
			-*) ;;
			*)
				cmd=${words[i]}
				# The usage, wrapped: up to a blank line.
				usage=$(vmctl help "$cmd" 2>/dev/null |
				    sed '/^$/q' | tr '\n' ' ')
				usage=${usage#*" $cmd"}
				# Options that take a value: "--name WORD".
				valopts=" $(grep -o -- '--[a-z-]* [A-Z][^] ]*' \
				    <<<"$usage" | cut -d ' ' -f 1 |
				    tr '\n' ' ')"
				;;
			esac
			continue
		fi
		# Past the command: count its positional arguments.
		case ${words[i]} in
		-*) [[ $valopts == *" ${words[i]} "* ]] && ((i++)) ;;
		*) ((npos++)) ;;
		esac
	done

	if [[ -z $cmd ]]; then
		case $prev in
		-s | --socket) _filedir; return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '-s --socket -j --json -h --help
			    --version' -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_vmctl_commands)" -- "$cur"))
		fi
		return
	fi

	case $prev in
	--kernel | --initrd | --cdrom | --vnc-password-file | --from-file) _filedir; return ;;
	--on-reboot) COMPREPLY=($(compgen -W 'restart stop' -- "$cur")); return ;;
	--firmware) COMPREPLY=($(compgen -W 'bios uefi' -- "$cur")); return ;;
	--managed) COMPREPLY=($(compgen -W 'cluster vmmd' -- "$cur")); return ;;
	--lost-tick-policy|--lost-ticks) COMPREPLY=($(compgen -W 'slew discard' -- "$cur")); return ;;
	--state) COMPREPLY=($(compgen -W 'defined starting running paused
	    stopping stopped crashed' -- "$cur")); return ;;
	esac
	if [[ $valopts == *" $prev "* ]]; then
		return		# a value nobody can guess: a size, a count...
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(grep -o -- '--[a-z-]*' <<<"$usage")
		    -s --socket -j --json -h --help" -- "$cur"))
		return
	fi
	case $cmd:$npos in
	help:0) COMPREPLY=($(compgen -W "$(_vmctl_commands)" -- "$cur")) ;;
	autostart:1) COMPREPLY=($(compgen -W 'on off' -- "$cur")) ;;
	screenshot:1) _filedir png ;;
	*:0 | *:[1-9]*)
		# NAME first, or NAME... (several): VM names.
		[[ $npos == 0 && $usage == *NAME* ||
		    $usage == *NAME...* ]] &&
		    COMPREPLY=($(compgen -W "$(_vmctl_names "${sock[@]}")" \
		    -- "$cur"))
		;;
	esac
}
complete -F _vmctl vmctl
