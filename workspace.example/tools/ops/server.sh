#!/bin/sh
# server.sh: a tiny MCP server over stdio, in newline-delimited JSON-RPC (one message a
# line, as the MCP specification's stdio transport says). It has one tool, ops: the
# question kinds (OP) the benchmark asks agent/agent.sh.
#
#   sh server.sh               serve on stdin/stdout
#   sh server.sh --self-test   answer initialize and tools/list to itself; exit 0 when ops is listed
if [ "${1:-}" = --self-test ]; then
	out=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | sh "$0")
	case $out in
	*'"name":"ops"'*) echo "self-test: ops listed"; exit 0 ;;
	esac
	echo "self-test: tools/list does not list ops: $out" >&2
	exit 1
fi
while IFS= read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
	case $line in
	*'"method":"initialize"'*)
		printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"ops","version":"1"}}}\n' "$id" ;;
	*'"method":"tools/list"'*)
		printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ops","description":"The question kinds (OP) the benchmark asks agent/agent.sh","inputSchema":{"type":"object","properties":{}}}]}}\n' "$id" ;;
	*'"method":"tools/call"'*)
		printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"upper lower count rev add pal mul max sort title"}]}}\n' "$id" ;;
	*'"method":"notifications/'*) ;;
	*) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no such method"}}\n' "$id" ;;
	esac
done
