#!/bin/sh
# A stand-in for Harbor's `harbor run` (no containers, no cloud): it writes the job layout
# Harbor documents (<jobs>/<job>/<trial>/result.json, trial.log, agent/), one trial per
# task of the -p dataset folder that matches a -i glob. Each task folder's `standin` file
# says how its trial ends:
#   reward X          the verifier's reward X
#   timeout X         AgentTimeoutError, and the verifier still scored X
#   envfail           an environment error: no verifier result
#   verifier-timeout  VerifierTimeoutError: no verifier result
#   noresult          a trial folder without result.json
#   twice             two trials of the task
#   ratelimit         the registry refused the image pull (429); the verifier still ran on the
#                     untouched container and scored 0 — an infrastructure failure, not a zero
#   sandboxfail X     the sandbox did not start (a cloud environment's start failure); reward X
#   org X             the trial names its task org/<name>, as registry datasets of org/name
#                     do; reward X
# Like Harbor it exits 0 whatever the trials did; it also leaves a stale job folder from
# "an earlier run" and a trial of a task nobody asked for, which hgate must not read.
# HARBOR_STANDIN_ARGS, when set, is a file that receives the arguments, one a line.
#
# HARBOR_STANDIN_VERSION (0.20, 0.21 or 0.22; default 0.22) selects the result.json of that
# Harbor version as its source defines it (src/harbor/models/trial/result.py,
# trial/config.py): a trial folder named <task name, last part, first 32 characters>__<7
# characters>; result.json with id, task_name, trial_name, config (the trial's config,
# agent.override_timeout_sec among it), agent_info, agent_result, verifier_result and
# exception_info with occurred_at (naive in 0.20, UTC from 0.21), and from 0.21
# verifier_environment_mode.
# -d <dataset> reads the tasks from $HARBOR_STANDIN_REGISTRY (a registry's tasks as Harbor
# downloads them). -c <job config> is read for agents[0].override_timeout_sec, as Harbor's
# `harbor run -c` does. HARBOR_STANDIN_TIMEOUTS, when set, is a file that receives, for each
# trial, "<task> <agent timeout>" as Harbor computes it (the job config's override, else the
# task.toml's [agent] timeout_sec, else "none": Harbor runs that agent unbounded).
set -eu
[ "$1" = run ] || { echo "harbor-standin: only 'run' is supported" >&2; exit 2; }
shift
[ -n "${HARBOR_STANDIN_ARGS:-}" ] && printf '%s\n' "$@" >"$HARBOR_STANDIN_ARGS"
path= jobs= job= patterns= override=null
version=${HARBOR_STANDIN_VERSION:-0.22}
case "$version" in 0.20|0.21|0.22) ;; *) echo "harbor-standin: no layout for version $version" >&2; exit 2 ;; esac
while [ $# -gt 0 ]; do
	case "$1" in
	-p) path=$2; shift ;;
	-d) path=${HARBOR_STANDIN_REGISTRY:?}; shift ;;
	-c) override=$(sed -n 's/.*"override_timeout_sec": *\([0-9.]*\).*/\1/p' "$2"); override=${override:-null}; shift ;;
	-o) jobs=$2; shift ;;
	--job-name) job=$2; shift ;;
	-i) patterns="$patterns
$2"; shift ;;
	-a|-m|-e|-n|-k|--timeout-multiplier|--ek) shift ;;
	esac
	shift
done
[ -n "${HARBOR_STANDIN_NOJOB:-}" ] && { echo "harbor: error: no such environment"; exit 1; }
mkdir -p "$jobs/$job" "$jobs/2020-01-01__00-00-00/stale__aaaaaaa"
printf '{"task_name": "stale", "verifier_result": {"rewards": {"reward": 1}}}\n' >"$jobs/2020-01-01__00-00-00/stale__aaaaaaa/result.json"
printf '{"id": "job"}\n' >"$jobs/$job/result.json"

trial() { # task n -> writes a trial folder, prints its path
	short=$(printf '%s' "${1##*/}" | cut -c1-32 | sed 's/[_-]*$//')
	d="$jobs/$job/${short}__$2abcdef"
	mkdir -p "$d/agent" "$d/verifier"
	echo "MARKER-$1-MARKER trajectory" >"$d/agent/trajectory.json"
	echo "trial log of $1: MARKER-$1-MARKER" >"$d/trial.log"
	echo "$d"
}
mode= at=2026-07-18T10:00:00.000000
[ "$version" = 0.20 ] || { mode='"verifier_environment_mode": "shared", '; at=$at+00:00; }
result() { # dir task verifier exception
	printf '{"id": "00000000-0000-4000-8000-000000000000", "task_name": "%s", "trial_name": "%s", "config": {"agent": {"name": "terminus-2", "override_timeout_sec": %s}}, "agent_info": {"name": "terminus-2", "version": "1"}, "agent_result": {"n_input_tokens": 100, "n_cache_tokens": 5, "n_output_tokens": 10, "cost_usd": 0.25}, "verifier_result": %s, %s"exception_info": %s}\n' \
		"$2" "$(basename "$1")" "$override" "$3" "$mode" "$4" >"$1/result.json"
}
exc() { printf '{"exception_type": "%s", "exception_message": "%s\\nTraceback ...", "exception_traceback": "...", "occurred_at": "%s"}' "$1" "$2" "$at"; }
timeout_of() { # task folder -> the agent timeout Harbor runs it with
	if [ "$override" != null ]; then echo "$override"; return; fi
	t=$(sed -n '/^\[agent\]/,/^\[/s/^timeout_sec *= *\([0-9.]*\).*/\1/p' "$1/task.toml")
	echo "${t:-none}"
}

for t in "$path"/*/; do
	name=$(basename "$t")
	[ -f "$t/task.toml" ] || continue
	asked=
	while IFS= read -r p; do
		[ -n "$p" ] || continue
		# shellcheck disable=SC2254
		case "$name" in $p) asked=1 ;; esac
	done <<PAT
$patterns
PAT
	[ -n "$asked" ] || continue
	[ -z "${HARBOR_STANDIN_TIMEOUTS:-}" ] || echo "$name $(timeout_of "$t")" >>"$HARBOR_STANDIN_TIMEOUTS"
	set -- $(cat "$t/standin")
	d=$(trial "$name" 1)
	case "$1" in
	reward) result "$d" "$name" "{\"rewards\": {\"reward\": $2}}" null ;;
	timeout) result "$d" "$name" "{\"rewards\": {\"reward\": $2}}" "$(exc AgentTimeoutError 'Agent execution timed out after 60s')" ;;
	envfail) result "$d" "$name" null "$(exc EnvironmentStartError 'docker: image pull failed')" ;;
	verifier-timeout) result "$d" "$name" null "$(exc VerifierTimeoutError 'verifier timed out')" ;;
	noresult) ;;
	ratelimit) result "$d" "$name" '{"rewards": {"reward": 0}}' "$(exc DockerImagePullError 'toomanyrequests: You have reached your pull rate limit (HTTP 429)')" ;;
	sandboxfail) result "$d" "$name" "{\"rewards\": {\"reward\": $2}}" "$(exc SandboxStartError 'sandbox failed to start')" ;;
	org) result "$d" "acme/$name" "{\"rewards\": {\"reward\": $2}}" null ;;
	twice) result "$d" "$name" "{\"rewards\": {\"reward\": 1}}" null
		d=$(trial "$name" 2); result "$d" "$name" "{\"rewards\": {\"reward\": 0}}" null ;;
	esac
done
d=$(trial intruder 9)
result "$d" intruder '{"rewards": {"reward": 1}}' null
echo "harbor-standin: job $job done"
