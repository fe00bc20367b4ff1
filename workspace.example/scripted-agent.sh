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
#
# It also takes part in hgate's harness phases (loop.harness in hgate.yaml): hgate
# names the phase in HGATE_PHASE. The attempt prints HGATE_SESSION=<id>, so the
# phases after it "resume" it; in iteration 1 it reflects and builds an MCP server
# (tools/ops) and a skill (tools/answer-format) into .hgate/harness, which hgate
# qualifies; in iteration 2 a broken server (tools/words), whose repair does not
# help: hgate quarantines it. An attempt given active servers (HGATE_MCP_CONFIG)
# calls the ops tool once through the command hgate gives, its proxy logging it.
set -eu

cd "$(dirname "$0")"
state=${SCRIPTED_AGENT_STATE:-.agent-state/next}

if [ $# -gt 0 ] && [ -f "$1" ]; then
	echo "scripted agent: got a prompt of $(wc -l <"$1" | tr -d ' ') lines"
fi

h=.hgate/harness
case ${HGATE_PHASE:-attempt} in
reflect)
	case ${HGATE_ITERATION:-} in
	1) echo '{"kind":"mcp","name":"ops","why":"I re-read every check.sh to learn the question kinds","spec":"tool ops: lists them"}' >"$HGATE_ANSWER_FILE" ;;
	2) echo '{"kind":"mcp","name":"words","why":"sorting words by hand","spec":"tool words"}' >"$HGATE_ANSWER_FILE" ;;
	*) echo "scripted agent: no tool to add" ;;
	esac
	exit 0
	;;
build)
	case ${HGATE_ITERATION:-} in
	1)
		mkdir -p $h/mcp $h/skills
		cp -R tools/ops $h/mcp/ops
		cp -R tools/answer-format $h/skills/answer-format
		echo "scripted agent: built the MCP server ops and the skill answer-format" ;;
	2)
		mkdir -p $h/mcp
		cp -R tools/words $h/mcp/words
		echo "scripted agent: built the MCP server words" ;;
	esac
	exit 0
	;;
artifact_repair)
	echo '# repaired? no: the self-test still looks for a tool it does not list' >>$h/mcp/words/server.sh
	echo "scripted agent: tried to repair words"
	exit 0
	;;
esac
if [ -n "${HGATE_ITERATION:-}" ]; then
	echo "HGATE_SESSION=scripted-$HGATE_ITERATION"
fi
if [ -n "${HGATE_MCP_CONFIG:-}" ]; then
	# Call ops as the config starts it (behind hgate's proxy): the first server's
	# command and args, one per line in the file hgate wrote.
	cmd=$(sed -n 's/^ *"command": "\(.*\)",\{0,1\}$/\1/p' "$HGATE_MCP_CONFIG" | head -n 1)
	set --
	for a in $(sed -n '/"args": \[/,/\]/p' "$HGATE_MCP_CONFIG" | sed -n 's/^ *"\(.*\)",\{0,1\}$/\1/p'); do
		set -- "$@" "$a"
	done
	answer=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ops","arguments":{}}}' | "$cmd" "$@" 2>/dev/null) || true
	echo "scripted agent: the ops tool says: $answer"
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
