#!/bin/sh
# selftest.sh: checks the example without hgate.
#
# Runs every task against the baseline agent and then after each candidate,
# the way run.sh applies them (a candidate expected to pass is kept, the others
# are undone), and compares the pass counts with the ones README.md promises.
# Each task gets the same 3 s budget as hgate.yaml's task_timeout; a task over
# it is ended with all its processes and scores null.
#
#   sh selftest.sh [REWARDS.tsv]
#
# With an argument it also writes every reward as "config<TAB>task<TAB>reward".
# It also runs the self-tests of tools/ (ops passes, words fails).
# Exit status: 0 every count as expected, 1 some count differs.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
budget=3
rewards=${1:-}

# config passed nulls: what README.md promises for each step.
expected='
baseline 22 0
01-mul-max 32 0
02-overfit-answer-table 14 0
03-regression-shared-loop 22 0
04-cheat-edit-checker 33 0
05-hang-mul-retry 27 5
06-sort-and-negatives 38 0
07-title-agent-hangs 42 0
08-palindrome-agent-crashes 0 0
'

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hgate-selftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
if [ -n "$rewards" ]; then
	: >"$rewards"
fi

# descendants PID...: prints the PIDs and the ids of all processes below them.
descendants() {
	_table=$(ps -A -o pid= -o ppid=)
	_all=" $* " _level=" $* "
	while [ "$_level" != " " ]; do
		_next=" "
		while read -r _c _pp; do
			case $_level in
			*" $_pp "*) _next="$_next$_c " ;;
			esac
		done <<EOF
$_table
EOF
		_level=$_next
		_all="$_all$_next"
	done
	echo $_all
}

# run_tasks DIR OUT: runs every task of DIR at once; OUT/<id>.status gets the
# exit status, or "timeout" for a task still running after $budget seconds.
run_tasks() (
	cd "$1"
	jobs=
	for d in tasks/*/; do
		id=${d#tasks/}
		id=${id%/}
		(
			st=0
			sh "tasks/$id/check.sh" >"$2/$id.out" 2>"$2/$id.err" || st=$?
			echo "$st" >"$2/$id.status"
		) &
		jobs="$jobs $id:$!"
	done
	waited=0
	while [ "$waited" -lt "$budget" ]; do
		left=0
		for j in $jobs; do
			if [ ! -f "$2/${j%%:*}.status" ]; then left=1; fi
		done
		if [ "$left" -eq 0 ]; then break; fi
		sleep 1
		waited=$((waited + 1))
	done
	late=
	for j in $jobs; do
		if [ ! -f "$2/${j%%:*}.status" ]; then
			late="$late ${j#*:}"
			echo timeout >"$2/${j%%:*}.status"
		fi
	done
	if [ -n "$late" ]; then
		kill -KILL $(descendants $late) 2>/dev/null || true
	fi
	wait
)

# reward OUT STATUS: the task's reward as hgate reads it (README, Benchmark protocol), or null.
reward() {
	if [ "$2" = timeout ]; then
		echo null
		return
	fi
	_last=$(sed -n '/[^[:space:]]/h; ${x;p;}' "$1")
	case $_last in
	'{'*'"reward"'*'}')
		printf '%s\n' "$_last" | sed 's/.*"reward": *\([0-9.]*\).*/\1/'
		;;
	'' | *[!0-9.]*)
		if [ "$2" -eq 0 ]; then echo 1; else echo 0; fi
		;;
	*)
		echo "$_last"
		;;
	esac
}

# e4 REWARD: REWARD in ten-thousandths (0.3333 → 3333, 1 → 10000, null → 0).
e4() {
	case $1 in
	null) echo 0; return ;;
	esac
	_i=${1%%.*} _f=
	case $1 in
	*.*) _f=${1#*.} ;;
	esac
	_f=$(printf '%s0000' "$_f" | cut -c1-4)
	echo $((${_i:-0} * 10000 + 1$_f - 10000))
}

# op ID: the op a task asks about, read from the original checker.
op() {
	sed -n "s/^[a-z_]* '\([a-z]*\) .*/\1/p" "$here/tasks/$1/check.sh"
}

ops='upper lower count rev add pal mul max sort title'

mkdir "$tmp/accepted"
cp -R "$here/." "$tmp/accepted/"
rm -rf "$tmp/accepted/workspace"

fails=0
printf '%-28s %-6s %-5s %-6s' config passed null mean
for o in $ops; do printf ' %-5s' "$o"; done
echo

for config in baseline "$here"/candidates/*/; do
	name=$(basename "$config")
	rm -rf "$tmp/trial" "$tmp/out"
	mkdir "$tmp/out"
	cp -R "$tmp/accepted" "$tmp/trial"
	if [ "$name" != baseline ]; then
		cp -R "$config/files/." "$tmp/trial/"
	fi
	run_tasks "$tmp/trial" "$tmp/out"

	passed=0 nulls=0 total=0 sum=0
	for o in $ops; do eval "p_$o=0 n_$o=0"; done
	for s in "$tmp"/out/*.status; do
		id=$(basename "$s" .status)
		r=$(reward "$tmp/out/$id.out" "$(cat "$s")")
		if [ -n "$rewards" ]; then
			printf '%s\t%s\t%s\n' "$name" "$id" "$r" >>"$rewards"
		fi
		o=$(op "$id")
		v=$(e4 "$r")
		total=$((total + 1))
		sum=$((sum + v))
		eval "n_$o=\$((n_$o + 1))"
		if [ "$r" = null ]; then nulls=$((nulls + 1)); fi
		if [ "$v" -ge 5000 ]; then
			passed=$((passed + 1))
			eval "p_$o=\$((p_$o + 1))"
		fi
	done
	mean=$((sum / total))
	printf '%-28s %-6s %-5s %d.%04d' "$name" "$passed/$total" "$nulls" $((mean / 10000)) $((mean % 10000))
	for o in $ops; do eval "printf ' %-5s' \"\$p_$o/\$n_$o\""; done
	echo

	want=$(printf '%s\n' "$expected" | sed -n "s/^$name //p")
	if [ "$want" != "$passed $nulls" ]; then
		echo "  expected passed and nulls: $want; got: $passed $nulls" >&2
		fails=$((fails + 1))
	fi
	if [ -f "$config/expect" ] && [ "$(cut -d: -f1 "$config/expect")" = pass ]; then
		rm -rf "$tmp/accepted"
		mv "$tmp/trial" "$tmp/accepted"
	fi
done

# The tools the scripted agent builds in the harness phases: ops's self-test passes
# (hgate qualifies it), words's fails (hgate quarantines it).
for want in ops:0 words:1; do
	tool=${want%%:*}
	st=0
	(cd "$here/tools/$tool" && sh server.sh --self-test) </dev/null >/dev/null 2>&1 || st=$?
	[ "$st" -ne 0 ] && st=1
	if [ "$st" != "${want#*:}" ]; then
		echo "  tools/$tool: self-test exit status $st, expected ${want#*:}" >&2
		fails=$((fails + 1))
	fi
done

if [ "$fails" -ne 0 ]; then
	echo "selftest: $fails config(s) differ from the expected counts" >&2
	exit 1
fi
echo "selftest: all counts as expected"
