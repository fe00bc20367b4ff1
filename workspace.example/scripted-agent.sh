#!/bin/sh
# scripted-agent.sh: a stand-in coding agent for `hgate loop`, offline and
# deterministic. Each run applies the next candidate from candidates/ (copies its
# files/ over the repository) and then, as the candidate's after-apply file
# says, either exits 0, hangs forever (hang), or exits 1 (crash).
#
#   sh scripted-agent.sh [PROMPT_FILE]
#
# Its position is kept in .agent-state/next (gitignored, so the gate and the
# loop's revert leave it alone, and named in hgate.yaml's loop.sandbox.writable,
# so the sandboxed agent may write it); delete that file to start over. The
# position moves on before the candidate is applied, so a run that hangs or
# crashes does not repeat itself. With no candidates left it changes nothing.
set -eu

cd "$(dirname "$0")"
state=${SCRIPTED_AGENT_STATE:-.agent-state/next}

if [ $# -gt 0 ] && [ -f "$1" ]; then
	echo "scripted agent: got a prompt of $(wc -l <"$1" | tr -d ' ') lines"
fi

n=1
if [ -f "$state" ]; then
	n=$(cat "$state")
fi
set -- candidates/*/
if [ "$n" -gt $# ]; then
	echo "scripted agent: no candidates left (all $# applied); changing nothing"
	exit 0
fi
eval "cand=\${$n}"
cand=${cand%/}

mkdir -p "$(dirname "$state")"
echo $((n + 1)) >"$state.tmp"
mv "$state.tmp" "$state"

echo "scripted agent: applying $cand: $(cat "$cand/description")"
cp -R "$cand/files/." .
# hgate loop takes the commit message from this file when the change is kept.
if [ -n "${HGATE_MESSAGE_FILE:-}" ]; then
	cp "$cand/description" "$HGATE_MESSAGE_FILE"
fi

after=
if [ -f "$cand/after-apply" ]; then
	after=$(cat "$cand/after-apply")
fi
case $after in
hang)
	echo "scripted agent: now hanging on purpose until the loop stops it"
	while :; do
		sleep 60
	done
	;;
crash)
	echo "scripted agent: crashing on purpose after a partial edit" >&2
	exit 1
	;;
esac
echo "scripted agent: done"
