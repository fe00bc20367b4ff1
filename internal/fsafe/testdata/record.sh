#!/bin/sh
# record.sh: the list of every (folder, name) hgate touches through internal/fsafe during
# workspace.example/loop.sh, with the harness phases and with --agents 2, each classified
# by which sandboxed process can write the folder. The planting script
# (cmd/hgate/testdata/script/deputy_plant_recorded.txtar) plants at the names whose
# writer is not "none"; its names.tsv is this script's output.
#
#   sh internal/fsafe/testdata/record.sh [DIR]
#
# Builds hgate, hgate-sandbox, hgate-mcp and hgate-gateway with -tags fsafetrace into DIR/bin (DIR: a new
# temporary folder, kept), runs loop.sh twice with HGATE_FSAFE_TRACE (loop.sh's own
# verdicts are for one agent and eight iterations: only its exit status 2 fails here),
# and prints on stderr the raw count of distinct (folder, name) pairs and on stdout the
# classified list, one "writer<TAB>folder<TAB>name" a line, sorted and distinct:
#
#   folder      {repo} (the worktree), {agent_worktree} (an agent's linked worktree with
#               --agents), {agent_tmpdir}, {harness} (.hgate/harness, the folder the
#               agent builds tools in), {trace_dir} (a gate's or prepare's, of tasks),
#               {report} (qualification's report folder, every check's {trace_dir}),
#               {room} (a clean room's tree), {activation} (the read-only copy of the
#               qualified tools), {workspace} (hgate's own state);
#   name        slash-separated under folder; the names fsafe.Replace gives its fresh
#               files (random, O_EXCL) are folded into ".NAME.hgate-*";
#   writer      agent, task or check: who can write there; none: no sandboxed process
#               (the planting script checks that each of them is refused there).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/fsafe-record.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/harness.tsv" "$out/agents2.tsv"

(cd "$root" && CGO_ENABLED=0 go build -tags fsafetrace -o "$out/bin/" ./cmd/hgate ./cmd/hgate-sandbox ./cmd/hgate-mcp ./cmd/hgate-gateway)
run() { # run NAME [LOOP FLAGS]
	st=0
	rm -rf "${out:?}/$1"
	HGATE="$out/bin/hgate" HGATE_FSAFE_TRACE="$out/$1.tsv" HGATE_LOOP_FLAGS="${2:-}" \
		sh "$root/workspace.example/loop.sh" "$out/$1" >"$out/$1.log" 2>&1 || st=$?
	[ "$st" -ne 2 ] || { echo "record.sh: loop.sh $1 failed: see $out/$1.log" >&2; exit 2; }
}
run harness
run agents2 '--agents 2 --iterations 4 --no-harness'

echo "record.sh: $(cat "$out/harness.tsv" "$out/agents2.tsv" | cut -f2,3 | sort -u | wc -l) distinct (folder, name) pairs recorded, in $out" >&2
for r in harness agents2; do
	sed "s#^\([a-z]*\)	$out/$r/project#\1	{P}#" "$out/$r.tsv"
done | awk -F'\t' -f "$here/classify.awk" | sort -u
