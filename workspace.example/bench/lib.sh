# bench/lib.sh: helpers shared by the checkers in tasks/*/check.sh.
#
# This folder is not a task (hgate only takes tasks/* as tasks) and the agent may
# not edit it: hgate.yaml's allow list leaves it out, so Step 0 guards it.
#
# Every checker asks the agent one question (a line "OP ARGS...") and grades the
# answer. The helpers show each reward shape hgate reads (README, Benchmark protocol):
#
#   reward_exact  the last stdout line is the reward, 1 or 0 (exit status ignored)
#   status_exact  no number printed: the exit status decides (0 pass, 1 fail)
#   reward_words  the last stdout line is a fraction: share of words in place
#   json_words    the last stdout line is a JSON object with a "reward" key
#
# Everything above the last line is the trace `hgate bench` keeps for failure
# analysis in workspace/traces/latest/<task>.log.

# Sorting and case mapping must not depend on the user's locale.
LC_ALL=C
export LC_ALL

# ask INPUT: prints the agent's answer to INPUT, given on stdin as one line.
ask() {
	printf '%s\n' "$1" | sh agent/agent.sh
}

# show INPUT WANT GOT: the trace lines every checker prints first.
show() {
	printf 'input:    %s\nexpected: %s\ngot:      %s\n' "$1" "$2" "$3"
}

# reward_exact INPUT WANT: prints 1 when the answer is exactly WANT, else 0.
reward_exact() {
	got=$(ask "$1")
	show "$1" "$2" "$got"
	if [ "$got" = "$2" ]; then
		echo 1
	else
		echo 0
	fi
}

# status_exact INPUT WANT: prints a verdict word (not a number, so hgate falls
# back to the exit status) and exits 0 when the answer is exactly WANT, else 1.
status_exact() {
	got=$(ask "$1")
	show "$1" "$2" "$got"
	if [ "$got" = "$2" ]; then
		echo PASS
		exit 0
	fi
	echo FAIL
	exit 1
}

# score_words GOT WANT: sets ok to the number of words of GOT that equal the word
# of WANT at the same position, and n to the larger of the two word counts, so
# extra words cost as much as missing ones.
score_words() {
	_got=$1 _want=$2 ok=0 n=0
	set -f
	for _w in $_want; do
		n=$((n + 1))
		set -- $_got
		if [ $# -ge $n ]; then
			shift $((n - 1))
			if [ "$1" = "$_w" ]; then
				ok=$((ok + 1))
			fi
		fi
	done
	set -- $_got
	if [ $# -gt $n ]; then
		n=$#
	fi
	set +f
}

# fraction OK N: prints OK/N with four decimals (1.0000 when N is 0).
fraction() {
	if [ "$2" -eq 0 ]; then
		echo 1.0000
		return
	fi
	_q=$(($1 * 10000 / $2))
	printf '%d.%04d\n' $((_q / 10000)) $((_q % 10000))
}

# reward_words INPUT WANT: partial credit, the share of words in the right place.
reward_words() {
	got=$(ask "$1")
	show "$1" "$2" "$got"
	score_words "$got" "$2"
	echo "words in place: $ok of $n"
	fraction "$ok" "$n"
}

# json_words INPUT WANT: the same partial credit, reported as a JSON object.
json_words() {
	got=$(ask "$1")
	show "$1" "$2" "$got"
	score_words "$got" "$2"
	printf '{"reward": %s, "words_right": %d, "words": %d}\n' "$(fraction "$ok" "$n")" "$ok" "$n"
}
