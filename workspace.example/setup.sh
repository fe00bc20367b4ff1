# setup.sh: the part run.sh and loop.sh share, sourced by both after they set
# $script (their name, for messages). It parses [DIR], makes the git history
# independent of the user's git settings, builds hgate (or takes $HGATE), and
# copies the example into a fresh repository at $proj, the current directory
# afterwards. It sets $here, $root, $tmp, $proj and $hgate, and defines die.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

die() {
	echo "$script: $*" >&2
	exit 2
}

if [ $# -gt 0 ]; then
	tmp=$1
	mkdir -p "$tmp" || die "cannot create $tmp"
	tmp=$(cd "$tmp" && pwd)
	[ -z "$(ls -A "$tmp")" ] || die "$tmp is not empty"
else
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/hgate-$script.XXXXXX")
	# The paths printed above (the loop's summary.json among them) go with it: say so.
	trap 'echo "$script: removing the temporary folder $tmp and every file named above in it; to keep them, run sh workspace.example/$script DIR" >&2; rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM
fi
proj=$tmp/project

# The example's git history must not depend on the user's git settings.
GIT_CONFIG_NOSYSTEM=1
GIT_CONFIG_GLOBAL=/dev/null
GIT_AUTHOR_NAME='hgate example'
GIT_AUTHOR_EMAIL=example@hgate.invalid
GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME
GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
export GIT_CONFIG_NOSYSTEM GIT_CONFIG_GLOBAL GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL \
	GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL

if [ -n "${HGATE:-}" ]; then
	hgate=$HGATE
else
	echo "== building hgate, hgate-sandbox, hgate-mcp and hgate-gateway"
	hgate=$tmp/bin/hgate
	# hgate-sandbox next to hgate is the shim of every sandboxed task (README, Install);
	# hgate-mcp qualifies the agent's MCP servers and logs their calls (loop.harness).
	# hgate-gateway is the model gateway the loop starts for claude and codex.
	(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/bin/" ./cmd/hgate ./cmd/hgate-sandbox ./cmd/hgate-mcp ./cmd/hgate-gateway) || die "go build failed"
fi

echo "== copying the example into $proj"
mkdir -p "$proj"
cp -R "$here/." "$proj/"
rm -rf "$proj/workspace" # state left from running things in the example itself
cd "$proj"
git init -q .
git symbolic-ref HEAD refs/heads/main
git add -A
git commit -q -m "example project: a sh agent and 44 tasks"

