package loop

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/egress"
)

// netServer is a server of hgate's that the agent reaches from its network namespace
// under loop.sandbox.network: model or hosts, at 127.0.0.1:Port inside it: the sandbox's
// shim listens there and brings the listener back, and Serve serves it for the phase.
type netServer struct {
	Name  string // for errors: "the model gateway", "the egress proxy"
	Port  int
	Serve func(net.Listener) // returns at once; the listener is closed when the phase ends
}

// agentNet is the agent's network under loop.sandbox.network: model or hosts, one per run.
type agentNet struct {
	servers []netServer
	env     []string      // what points the agent's tools at them (HTTPS_PROXY)
	proxy   *egress.Proxy // with hosts
	log     *os.File      // the proxy's refusals: runs/<id>/egress.log
}

// egressLogName is the run's log of the requests the egress proxy refused.
const egressLogName = "egress.log"

// networkName is loop.sandbox.network as run_config.json keeps it: all, model, or
// "hosts: a.example, b.example:8443".
func networkName(nw config.Network) string {
	switch nw.Mode {
	case "":
		return config.NetworkAll
	case config.NetworkHosts:
		return "hosts: " + strings.Join(nw.Hosts, ", ")
	}
	return nw.Mode
}

// networkState refuses a run whose loop.sandbox.network cannot be had: model and hosts
// need the sandbox and a network namespace, and never fall back to the host's network.
func networkState(cfg config.Sandbox) error {
	if !cfg.Network.Isolated() {
		return nil
	}
	fix := "set loop.sandbox.network: all, knowing the agent then has the host's network"
	if !cfg.Enabled {
		return &NotStarted{Reason: "network " + cfg.Network.Mode + " needs the agent's sandbox, which is off", Where: "loop.sandbox.network", Fix: fix}
	}
	if err := namespaces(); err != nil {
		return &NotStarted{Reason: fmt.Sprintf("network %s needs a network namespace, which this system does not give (%v)", cfg.Network.Mode, err), Where: "loop.sandbox.network", Fix: fix}
	}
	return nil
}

// openNet starts what loop.sandbox.network asks for besides the namespace (nil for all):
// the egress proxy with hosts. The model gateway, run by the loop for every network
// mode, is the first server: at merge, the run's gateway is added here as
// netServer{"the model gateway", <its port on the host's 127.0.0.1>, gateway.Serve}, so
// that the URL its CLI is given works inside the namespace as it does outside.
func (r *runner) openNet(model ...netServer) (*agentNet, error) {
	nw := r.cfg.Sandbox.Network
	if !nw.Isolated() || r.j.Sandbox == SandboxOff {
		return nil, nil
	}
	an := &agentNet{servers: model}
	if nw.Mode != config.NetworkHosts {
		fmt.Fprintln(r.log, "[loop] the agent's network: model (loopback only, its model gateway reachable)")
		r.warnTaskNetwork()
		return an, nil
	}
	f, err := os.OpenFile(filepath.Join(r.dir, egressLogName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("loop: egress log: %w", err)
	}
	p, err := egress.New(egress.Config{Hosts: nw.Hosts, Log: f})
	if err != nil {
		f.Close()
		return nil, &NotStarted{Reason: err.Error(), Where: "loop.sandbox.network.hosts", Fix: "name each host as a.example or a.example:443"}
	}
	an.proxy, an.log = p, f
	port := freePort(an.ports())
	an.servers = append(an.servers, netServer{Name: "the egress proxy", Port: port, Serve: p.Serve})
	proxy := "http://127.0.0.1:" + strconv.Itoa(port)
	// Both spellings: tools differ in which they read. Loopback (the gateway) is reached
	// directly.
	fmt.Fprintf(r.log, "[loop] the agent's network: its model gateway and %s through hgate's proxy (refusals in %s)\n",
		strings.Join(nw.Hosts, ", "), filepath.Join(r.dir, egressLogName))
	r.warnTaskNetwork()
	an.env = []string{"HTTPS_PROXY=" + proxy, "https_proxy=" + proxy, "HTTP_PROXY=" + proxy, "http_proxy=" + proxy,
		"NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1"}
	return an, nil
}

// freePort is the egress proxy's port inside the namespace, which holds only hgate's
// listeners: 3128 unless taken by one of them.
func freePort(taken []int) int {
	port := 3128
	for slices.Contains(taken, port) {
		port++
	}
	return port
}

// ports are the ports the shim listens at, in the servers' order.
func (an *agentNet) ports() []int {
	out := make([]int, len(an.servers))
	for i, s := range an.servers {
		out[i] = s.Port
	}
	return out
}

// serve hands the listeners the agent's sandbox brought back to their servers and
// returns what closes them when the phase ends (a listener holds its namespace).
func (an *agentNet) serve(ls []net.Listener) (stop func(), err error) {
	stop = func() {
		for _, l := range ls {
			l.Close()
		}
	}
	if an == nil {
		return stop, nil
	}
	if len(ls) != len(an.servers) {
		stop()
		return func() {}, fmt.Errorf("loop: the sandbox brought back %d listeners for %d servers", len(ls), len(an.servers))
	}
	for i, s := range an.servers {
		s.Serve(ls[i])
	}
	return stop, nil
}

// close stops the proxy; the gateway is the run's, closed by it.
func (an *agentNet) close() {
	if an == nil || an.proxy == nil {
		return
	}
	an.proxy.Close()
	an.log.Close()
}

// warnTaskNetwork says, under an agent's network that is cut off, when the benchmark's
// tasks still share the host's (clean_room.network, the default): the test split's data
// can then reach the agent through a train task, which can listen beside the test split's
// tasks on one pool, or read the sockets they closed (TIME_WAIT, for a minute), and print
// it into a trace the agent reads (attack_gate_train_listener.txtar).
func (r *runner) warnTaskNetwork() {
	if r.env.CleanRoom && !r.env.Config.CleanRoom.Network {
		return // each task has a loopback of its own
	}
	fmt.Fprintln(r.log, "[loop] warning: the benchmark's tasks share this host's network (clean_room.network): a train task can hear the test split's tasks there, beside them or through the sockets they closed, and print it into a trace the agent reads; set clean_room.network: false where the benchmark needs no network")
}
