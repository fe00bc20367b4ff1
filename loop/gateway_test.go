package loop

import (
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/gateway"
)

// TestGatewaySecondListener: a session's base URL names the port of the host-side
// listener; a listener the run's gateway is also given (as the jail's namespace will
// hand one back, bound on that same port) answers the same scopes.
func TestGatewaySecondListener(t *testing.T) {
	gw, err := gateway.New(gateway.Config{AnthropicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gw.Serve(host)
	r := &runner{mg: &modelGateway{gw: gw, port: host.Addr().(*net.TCPAddr).Port, routed: agentcli.Claude{}, up: agentcli.Upstream{API: "anthropic"}}}
	defer gw.Close()
	if r.gatewayPort() != r.mg.port || (&runner{}).gatewayPort() != 0 {
		t.Fatalf("gatewayPort %d, want %d (0 without a gateway)", r.gatewayPort(), r.mg.port)
	}
	_, env, scope := r.routeSession(sessionSpec{Phase: "attempt", Repair: 1, Iteration: 3, Tag: "T"}, []string{"claude", "-p"})
	if scope != "repair/3/T" || len(env) != 1 {
		t.Fatalf("scope %q, env %q: want repair/3/T and the base URL alone (no key held)", scope, env)
	}
	base := env[0][len("ANTHROPIC_BASE_URL="):]
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.serveGateway(other)
	for _, addr := range []string{host.Addr().String(), other.Addr().String()} {
		u := fmt.Sprintf("http://%s%s/", addr, base[len(fmt.Sprintf("http://127.0.0.1:%d", r.mg.port)):])
		resp, err := http.Head(u)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("HEAD %s: %v %v", u, resp, err)
		}
		resp.Body.Close()
	}
}

// TestMeterPhase: each agent phase counts under its own name in the telemetry.
func TestMeterPhase(t *testing.T) {
	for _, c := range []struct {
		phase  string
		repair int
		want   string
	}{{"attempt", 0, "attempt"}, {"attempt", 2, "repair"}, {"reflect", 0, "reflect"}, {"build", 0, "build"}, {"artifact_repair", 1, "qualification"}} {
		if got := meterPhase(c.phase, c.repair); got != c.want {
			t.Errorf("meterPhase(%q, %d) = %q, want %q", c.phase, c.repair, got, c.want)
		}
	}
}
