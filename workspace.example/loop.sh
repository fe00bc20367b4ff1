#!/bin/sh
# loop.sh: runs the example end to end with `hgate loop`, offline.
#
#   sh workspace.example/loop.sh [DIR]
#
# Builds hgate from this repository, copies the example into a fresh git
# repository (in DIR, kept afterwards, or in a temporary folder that is
# removed), runs `hgate prepare`, then `hgate loop`: hgate.yaml's loop section
# runs scripted-agent.sh, which applies one candidate per iteration (one of
# them cheats, one hangs, one crashes). It prints results.tsv, the git log,
# the refs holding rejected attempts and summary.json. Set HGATE to use an
# hgate binary instead of building one. Needs Go, git and a POSIX sh.
#
# The loop also runs the harness phases (hgate.yaml loop.harness): the scripted
# agent builds an MCP server and a skill in iteration 1, which hgate qualifies and
# gives to the later attempts, and a broken server in iteration 2, which hgate
# quarantines after one repair; loop.sh prints `hgate harness list`.
#
# Exit status: 0 every candidate ended as its `expect` file says (pass: a
# commit on main; reject: an attempt ref; `expect-loop`, where a candidate has
# one, says what differs under the loop's sandbox: unchanged, the sandbox
# refused the write), the tools ops and answer-format are qualified, words is
# quarantined and the later attempts called ops at least once; 1 some did not;
# 2 something failed before an answer (build, prepare, git, the loop itself).
set -eu

script=loop.sh
. "$(dirname "$0")/setup.sh"

echo "== hgate prepare"
"$hgate" prepare >"$tmp/prepare.log" 2>&1 || {
	cat "$tmp/prepare.log" >&2
	die "hgate prepare failed"
}
tail -n 1 "$tmp/prepare.log"

echo "== hgate loop (one iteration per candidate; candidate 07 hangs for attempt_timeout)"
status=0
# HGATE_LOOP_FLAGS: extra flags, e.g. --no-sandbox where the kernel has no Landlock.
"$hgate" loop ${HGATE_LOOP_FLAGS:-} || status=$?
[ "$status" -eq 0 ] || die "hgate loop exited with status $status"

run=$(ls workspace/runs | tail -n 1)
echo
echo "== workspace/results.tsv"
cat workspace/results.tsv
echo
echo "== git log"
git log --oneline
echo
echo "== rejected attempts (git show REF to see one)"
git for-each-ref --format='%(refname)  %(objectname:short)' "refs/hgate/attempts/$run/"
echo
echo "== workspace/runs/$run/summary.json"
cat "workspace/runs/$run/summary.json"
echo
echo "== verdicts"

# Candidate i is applied in iteration i: a pass is a commit, a reject an attempt ref.
mismatches=0
i=0
for cand in candidates/*/; do
	i=$((i + 1))
	cand=${cand%/}
	expect=$cand/expect
	case " ${HGATE_LOOP_FLAGS:-} " in
	*" --no-sandbox "*) ;; # unsandboxed, the loop sees what run.sh sees
	*) [ -f "$cand/expect-loop" ] && expect=$cand/expect-loop ;;
	esac
	want=$(cut -d: -f1 "$expect")
	if git rev-parse -q --verify "refs/hgate/attempts/$run/$i" >/dev/null; then
		got=reject
	elif grep -q "\"iteration\": $i," "workspace/runs/$run/summary.json" &&
		[ -n "$(sed -n "/\"iteration\": $i,/,/}/p" "workspace/runs/$run/summary.json" | grep '"outcome": "kept"')" ]; then
		got=pass
	elif [ -n "$(sed -n "/\"iteration\": $i,/,/}/p" "workspace/runs/$run/summary.json" | grep '"outcome": "unchanged"')" ]; then
		got=unchanged
	else
		got=missing
	fi
	mark=ok
	if [ "$got" != "$want" ]; then
		mark="UNEXPECTED (wanted $want)"
		mismatches=$((mismatches + 1))
	fi
	printf '%-30s %-7s %s\n' "${cand#candidates/}" "$got" "$mark"
done

# The harness phases: iteration 1's server and skill qualified (and given to the
# later attempts, whose calls of ops hgate's proxy logged), iteration 2's broken
# server quarantined. The verdicts are hgate's registry, as harness list prints it.
echo
echo "== the tools the agent built for itself (hgate harness list)"
"$hgate" harness list
list=$("$hgate" harness list --json | tr -d ' \n')
for want in mcp/ops:qualified skills/answer-format:qualified mcp/words:quarantined; do
	path=${want%%:*}
	status=${want#*:}
	got=$(printf '%s' "$list" | sed -n "s|.*\"path\":\"$path\",\"status\":\"\([a-z]*\)\".*|\1|p")
	mark=ok
	if [ "$got" != "$status" ]; then
		mark="UNEXPECTED (wanted $status)"
		mismatches=$((mismatches + 1))
	fi
	printf '%-30s %-11s %s\n' "$path" "${got:-missing}" "$mark"
done
calls=$(grep -c '"tool":"ops","status":"completed"' "workspace/runs/$run/mcp_calls.jsonl" 2>/dev/null) || calls=0
mark=ok
if [ "$calls" -eq 0 ]; then
	mark="UNEXPECTED (wanted at least one)"
	mismatches=$((mismatches + 1))
fi
printf '%-30s %-11s %s\n' "calls of ops (mcp_calls.jsonl)" "$calls" "$mark"
if [ -n "$(git status --porcelain)" ]; then
	echo "loop.sh: the worktree is not clean after the loop:" >&2
	git status --short >&2
	mismatches=$((mismatches + 1))
fi
if [ "$mismatches" -ne 0 ]; then
	echo "loop.sh: $mismatches unexpected outcome(s)" >&2
	exit 1
fi
echo "loop.sh: every candidate and every tool ended as expected"
