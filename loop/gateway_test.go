package loop

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/gatewayapi"
)

// TestGatewaySecondListener: a session's base URL names the port of the host-side
// listener; a listener the run's gateway is also given (as the jail's namespace will
// hand one back, bound on that same port) answers the same scopes.
func TestGatewaySecondListener(t *testing.T) {
	gw := startGateway(t, gatewayapi.Config{AnthropicURL: "http://127.0.0.1:1"})
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gw.Serve(host)
	r := &runner{mg: &modelGateway{gw: gw, port: host.Addr().(*net.TCPAddr).Port, routed: agentcli.Claude{}, up: agentcli.Upstream{API: "anthropic"}, log: io.Discard}}
	if r.mg.hostPort() != r.mg.port || (&runner{}).mg.hostPort() != 0 {
		t.Fatalf("hostPort %d, want %d (0 without a gateway)", r.mg.hostPort(), r.mg.port)
	}
	_, env, scope, _ := r.mg.route(sessionSpec{Phase: "attempt", Repair: 1, Iteration: 3, Tag: "T"}, []string{"claude", "-p"})
	if scope != "repair/3/T" || len(env) != 1 {
		t.Fatalf("scope %q, env %q: want repair/3/T and the base URL alone (no key held)", scope, env)
	}
	base := env[0][len("ANTHROPIC_BASE_URL="):]
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.mg.serve(other)
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

// TestBudgetCutIsNoCrash: an agent ended by the gateway's refusal on the budget, even its
// first request (its CLI says it did not start), neither moves the consecutive-crash count
// nor stops a resumed run as "the agent did not start": a larger budget goes on.
func TestBudgetCutIsNoCrash(t *testing.T) {
	cut := Iteration{Iteration: 2, Agent: AgentCrashed, AgentDetail: notStarted + "403 budget reached", BudgetCut: "budget reached", Outcome: OutcomeSetAside}
	r := &runner{j: &journal{Crashes: 1, Iterations: []Iteration{cut}}}
	(&step{r: r}).count(&cut)
	if r.j.Crashes != 1 {
		t.Fatalf("a budget cut moved the crash count from 1 to %d", r.j.Crashes)
	}
	if why := r.notStarted(); why != "" {
		t.Fatalf("notStarted() = %q for a budget cut", why)
	}
	cut.BudgetCut = ""
	r.j.Iterations[0] = cut
	if why := r.notStarted(); why == "" {
		t.Fatal("notStarted() is empty for an agent that did not start")
	}
	if (&step{r: r}).count(&cut); r.j.Crashes != 2 {
		t.Fatalf("a crash moved the crash count from 1 to %d, want 2", r.j.Crashes)
	}
}

// startGateway starts hgate-gateway as the loop does (the build shimtest put beside the
// test binary), ended with the test.
func startGateway(t *testing.T, cfg gatewayapi.Config) *gatewayapi.Client {
	t.Helper()
	gw, err := gatewayapi.Start(cfg, nil, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	return gw
}
