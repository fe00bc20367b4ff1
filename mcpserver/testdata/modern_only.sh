# A server of the 2026-07-28 specification only: no initialize handshake; every request
# carries its protocol version in _meta and is answered on its own.
v='"io.modelcontextprotocol/protocolVersion":"2026-07-28"'
while IFS= read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
	case "$line" in
	*'"method":"server/discover"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}}\n' "$id" ;;
	*'"method":"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"initialize is not supported: this server speaks 2026-07-28 only"}}\n' "$id" ;;
	*'"method":"tools/list"'*"$v"*) printf '{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","tools":[{"name":"new","inputSchema":{"type":"object"}}],"ttlMs":0}}\n' "$id" ;;
	*'"method":"tools/list"'*) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}}\n' "$id" ;;
	*) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id" ;;
	esac
done
