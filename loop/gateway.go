package loop

import (
	"fmt"
	"io"
	"math"
	"net"
	"strings"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/agentout"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gatewayapi"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/spend"
)

// modelGateway is the run's model gateway: one per run, a process of hgate-gateway's
// that the loop starts with the run and ends with it (and that ends with the loop if the
// loop is killed), answering on the host's loopback. The agent's CLI (claude, codex: agentcli.Routed)
// reaches its model through it, each session under a scope of its own; where it metered
// a session, its count is that session's spend, and it refuses a request that would start
// past the budget.
type modelGateway struct {
	gw     *gatewayapi.Client
	port   int // its host-side listener's: a jail may bind the same port inside its namespace
	routed agentcli.Routed
	up     agentcli.Upstream
}

// gatewayPort is the port of the run's gateway listener on the host's 127.0.0.1 (0: no
// gateway): the agent's network namespace, where it has one, binds the same port, so the
// session's base URL works on both sides.
func (r *runner) gatewayPort() int {
	if r.mg == nil {
		return 0
	}
	return r.mg.port
}

// serveGateway makes the run's gateway answer on l too: a listener bound on the same
// port inside the agent's network namespace (loop.sandbox.network: model), handed back by
// the sandbox's shim. Closing the gateway closes it.
func (r *runner) serveGateway(l net.Listener) {
	if r.mg != nil {
		r.mg.gw.Serve(l)
	}
}

// gatewayServer is the run's gateway as the agent's network namespace serves it
// (loop.sandbox.network: model or hosts): none when no gateway runs.
func (r *runner) gatewayServer() []netServer {
	if r.mg == nil {
		return nil
	}
	return []netServer{{Name: "the model gateway", Port: r.gatewayPort(), Serve: r.serveGateway}}
}

// openGateway starts the run's gateway when the agent's CLI can be routed through it;
// the returned func closes it (nil when none started).
func (r *runner) openGateway() (func(), error) {
	routed, ok := r.cli().(agentcli.Routed)
	if !ok {
		return nil, nil
	}
	up, ok := routed.Upstream()
	if !ok {
		fmt.Fprintf(r.log, "[loop] the model gateway is not used: %s; the agent's spend is what its CLI reports\n", up.Why)
		return nil, nil
	}
	usd, tokens := r.spent()
	cfg := gatewayapi.Config{
		Prices: gatewayapi.DefaultPrices.Merge(gatewayPrices(r.cfg.Prices)),
		Limits: gatewayapi.Limits{USD: r.cfg.BudgetUSD, Tokens: int64(r.cfg.BudgetTokens)},
		Spent:  gatewayapi.Scope{USD: usd, Tokens: spend.Tokens{Input: tokens}},
		// An agent kept off the network is kept off the provider's web tools too.
		NoWebTools: r.cfg.Sandbox.Network.Isolated(),
	}
	if up.API == "anthropic" {
		cfg.AnthropicURL, cfg.AnthropicKey = up.URL, up.Key
	} else {
		cfg.OpenAIURL, cfg.OpenAIKey = up.URL, up.Key
	}
	gw, err := gatewayapi.Start(cfg, r.gatewayUsage, r.log)
	if err != nil {
		// Its prices, the upstream's URL, or hgate-gateway missing beside hgate: the user's
		// to correct, a refusal (its errors say which, "the model gateway: ...").
		where := "loop.prices, the " + up.API + " base URL in the environment or the agent's config, or hgate-gateway beside hgate"
		return nil, RefusalLines(err.Error(), where, "correct it, then run hgate loop again")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = gw.Close()
		return nil, fmt.Errorf("loop: the model gateway: %w", err)
	}
	gw.Serve(l)
	r.mg = &modelGateway{gw: gw, port: l.Addr().(*net.TCPAddr).Port, routed: routed, up: up}
	key := "the agent's own login passes through"
	if up.Key != "" {
		key = "it holds the API key, the agent has a placeholder"
	}
	fmt.Fprintf(r.log, "[loop] the agent's model requests go through hgate's model gateway on 127.0.0.1:%d (%s API; %s)\n", r.mg.port, up.API, key)
	return func() { _ = l.Close(); _ = gw.Close() }, nil
}

// gatewayPrices is loop.prices as the gateway's table: a cache write at the input
// price, a cache read at cached_input (input when unset), as the loop prices them.
func gatewayPrices(prices map[string]config.Price) gatewayapi.Prices {
	out := gatewayapi.Prices{}
	for model, p := range prices {
		cached := p.Input
		if p.CachedInput != nil {
			cached = *p.CachedInput
		}
		out[model] = gatewayapi.Price{Input: p.Input, Output: p.Output, CacheRead: cached, CacheWrite: p.Input}
	}
	return out
}

// meterPhase is the phase a session's scope counts under in the telemetry: attempt,
// repair, reflect, build or qualification (an artifact repair).
func meterPhase(phase string, repair int) string {
	switch {
	case phase == "attempt" && repair > 0:
		return "repair"
	case phase == string(phaseArtifactRepair):
		return "qualification"
	}
	return phase
}

// routeSession registers a scope for one session and points its CLI at it: its command
// line and environment, the provider's key replaced by a placeholder where the gateway
// holds it. name is "" when the run has no gateway.
func (r *runner) routeSession(spec sessionSpec, args []string) (out, env []string, name string) {
	if r.mg == nil {
		return args, nil, ""
	}
	name = fmt.Sprintf("%s/%d/%s", meterPhase(spec.Phase, spec.Repair), spec.Iteration, spec.Tag)
	prefix, err := r.mg.gw.Scope(name)
	if err != nil {
		// The gateway is gone: the session's requests fail, and its CLI says so.
		fmt.Fprintf(r.log, "[loop] the model gateway: %v\n", err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d%s", r.mg.port, prefix)
	held := r.mg.up.Key != ""
	out, env = r.mg.routed.Route(args, agentcli.Via{Base: base, Held: held, NoWebTools: r.cfg.Sandbox.Network.Isolated()})
	if held && r.mg.up.KeyEnv != "" {
		env = append(env, r.mg.up.KeyEnv+"="+agentcli.KeyPlaceholder)
	}
	return out, env, name
}

// gatewayUsage journals count, the count of the session a usage event belongs to, with
// the journal's own atomic write (on the gateway client's goroutine, which acks the event
// after: the gateway holds the response until then). The journal holds one
// such count, the session in flight's: it stays bounded however long the stream. While a
// command served to the agent holds the journal (a gate), the event is not waited for:
// the next one, or the session's end, journals the count (the stream is never held up).
func (r *runner) gatewayUsage(u gatewayapi.Usage, count gatewayapi.Scope) {
	saved := r.genAgentUsage(u, count) || r.sessionUsage(u, count)
	if saved && !u.Final {
		fault.Point("loop-gateway-usage") // a stream's usage journaled, its end not seen
	}
}

// sessionUsage journals the count of the single session in flight when u is its: true
// when saved.
func (r *runner) sessionUsage(u gatewayapi.Usage, count gatewayapi.Scope) bool {
	if !r.refsMu.TryLock() {
		return false
	}
	defer r.refsMu.Unlock()
	if m := r.j.Metering; m != nil && m.Scope == u.Scope && r.mg != nil {
		m.Count = count
		return r.save() == nil
	}
	return false
}

// genAgentUsage journals the count of the generation's agent u belongs to, in its own
// entry (genMu orders the agents' journal writes): true when saved. While another agent's
// write holds the journal, the next event, or the agent's end, journals the count.
func (r *runner) genAgentUsage(u gatewayapi.Usage, count gatewayapi.Scope) bool {
	if r.mg == nil || !r.genMu.TryLock() {
		return false
	}
	defer r.genMu.Unlock()
	if r.j.Gen == nil {
		return false
	}
	for i := range r.j.Gen.Agents {
		if m := r.j.Gen.Agents[i].Metering; m != nil && m.Scope == u.Scope {
			m.Count = count
			return r.save() == nil
		}
	}
	return false
}

// takeMeter is the spend of the session that just ended (or that a killed hgate left):
// the gateway's count where it metered a request of it, else the CLI's figure (cli). The
// CLI's figure is kept beside the gateway's in the iteration, a disagreement shown; a
// request the gateway refused on the budget cuts the iteration.
func (r *runner) takeMeter(it *Iteration, cli agentout.Run) agentout.Run {
	r.refsMu.Lock()
	m := r.j.Metering
	r.j.Metering = nil
	r.refsMu.Unlock()
	return r.meterSpend(it, m, cli)
}

// meterSpend is takeMeter's for the session m names (nil: none was metered).
func (r *runner) meterSpend(it *Iteration, m *meterState, cli agentout.Run) agentout.Run {
	if m == nil {
		return cli
	}
	c := m.Count
	if r.mg != nil {
		if live, ok := r.mg.scopes()[m.Scope]; ok {
			c = live
		} else {
			r.mg.charge(c.Spend(), r.log) // a killed hgate's session: this gateway never saw it
		}
	}
	r.addTelemetry(m.Scope, c)
	if c.Requests == 0 && c.Budget == 0 {
		r.chargeGateway(cli)
		return cli
	}
	r.keepCLIFigure(it, cli, c)
	if c.Open > 0 {
		it.SpendOpen = true
		fmt.Fprintf(r.log, "[loop] iteration %d: %d model response(s) were cut before their end: the spend counts each up to its last usage event (an upper bound, marked open)\n", it.Iteration, c.Open)
	}
	if c.Budget > 0 && it.BudgetCut == "" {
		tot := r.mg.total()
		it.BudgetCut = fmt.Sprintf("budget reached: the gateway refused the agent's next model request with %s", r.budget().Reached(tot.Spend()))
	}
	usd := c.USD
	return agentout.Run{Format: cli.Format, SessionID: cli.SessionID, CostUSD: &usd, Tokens: c.Tokens}
}

// total is the gateway's count over the run (zero once the gateway is gone).
func (mg *modelGateway) total() gatewayapi.Scope {
	if mg == nil {
		return gatewayapi.Scope{}
	}
	t, _ := mg.gw.Total()
	return t
}

// scopes is the gateway's count by scope (none once the gateway is gone).
func (mg *modelGateway) scopes() map[string]gatewayapi.Scope {
	s, _ := mg.gw.Scopes()
	return s
}

// charge tells the gateway of spend it did not see; a gateway gone forwards nothing more,
// so only the log says it.
func (mg *modelGateway) charge(s spend.Spend, log io.Writer) {
	if err := mg.gw.Charge(s); err != nil {
		fmt.Fprintf(log, "[loop] the model gateway: %v\n", err)
	}
}

// chargeGateway tells the gateway of spend it did not see (the benchmark's, a session it
// did not meter), so that its budget check counts the run's whole spend.
func (r *runner) chargeGateway(out agentout.Run) {
	if r.mg == nil {
		return
	}
	s := spend.Spend{Tokens: out.Tokens}
	if out.CostUSD != nil {
		s.USD = *out.CostUSD
	}
	r.mg.charge(s, r.log)
}

// keepCLIFigure keeps what the CLI reported beside the gateway's count, and shows a
// disagreement above 2% or $0.01 (dollars, where the CLI reports them), or above 2% of
// the tokens.
func (r *runner) keepCLIFigure(it *Iteration, cli agentout.Run, c gatewayapi.Scope) {
	it.Metered = true
	if cli.CostUSD != nil {
		v := spend.AddUSD(0, *cli.CostUSD)
		if it.CLICostUSD != nil {
			v = spend.AddUSD(*it.CLICostUSD, *cli.CostUSD)
		}
		it.CLICostUSD = &v
	}
	t := cli.Tokens
	if it.CLITokens != nil {
		t = it.CLITokens.Add(t)
	}
	it.CLITokens = &t
	why := ""
	if cli.CostUSD != nil && math.Abs(*cli.CostUSD-c.USD) > max(0.02*math.Max(*cli.CostUSD, c.USD), 0.01) {
		why = fmt.Sprintf("the CLI reported $%.4f, the gateway counted $%.4f", *cli.CostUSD, c.USD)
	} else if a, b := float64(cli.Tokens.Total()), float64(c.Tokens.Total()); cli.Tokens.Total() > 0 && math.Abs(a-b) > 0.02*math.Max(a, b) {
		why = fmt.Sprintf("the CLI reported %d tokens, the gateway counted %d", cli.Tokens.Total(), c.Tokens.Total())
	}
	if why != "" {
		it.SpendDisagreement = why
		fmt.Fprintf(r.log, "[loop] iteration %d: the agent's spend: %s; the gateway's figure counts\n", it.Iteration, why)
	}
}

// addTelemetry adds a session's count at the gateway to the run's, by phase.
func (r *runner) addTelemetry(scope string, c gatewayapi.Scope) {
	phase, _, _ := strings.Cut(scope, "/")
	if r.j.Telemetry == nil {
		r.j.Telemetry = map[string]gatewayapi.Scope{}
	}
	r.j.Telemetry[phase] = sumScope(r.j.Telemetry[phase], c)
}

// telemetry is the summary's view of the journal's count by phase; nil for none.
func telemetry(phases map[string]gatewayapi.Scope) *Telemetry {
	if len(phases) == 0 {
		return nil
	}
	t := &Telemetry{Phases: phases}
	for _, c := range phases {
		t.Total = sumScope(t.Total, c)
	}
	return t
}

// sumScope is a and b counted together, saturating.
func sumScope(a, b gatewayapi.Scope) gatewayapi.Scope {
	a.Tokens, a.USD = a.Tokens.Add(b.Tokens), spend.AddUSD(a.USD, b.USD)
	a.Requests += b.Requests
	a.Refused += b.Refused
	a.Budget += b.Budget
	a.Errors += b.Errors
	a.Retried += b.Retried
	a.Open += b.Open
	a.Unpriced = a.Unpriced || b.Unpriced
	return a
}
