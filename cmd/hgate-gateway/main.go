// Command hgate-gateway is hgate's model gateway, which hgate loop starts for an agent
// whose CLI it routes (claude, codex): a binary of its own so that net/http and
// crypto/tls are paid for by it alone, not at the start of every hgate command.
package main

import (
	"os"

	"github.com/hgate/hgate/gateway"
)

func main() {
	os.Exit(gateway.Main())
}
