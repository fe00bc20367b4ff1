package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gatewayapi"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/modelstub"
	"github.com/hgate/hgate/internal/sandbox"
)

// netBot is the agent of the network tests: it tries each address with curl and writes
// what it got, and curl's exit status, to $OUT/<name>.txt. With -p curl tunnels through
// the proxy of its environment (CONNECT), as the CLIs do for HTTPS.
const netBot = `try() { name=$1; shift; curl -s -m 10 "$@" > "$OUT/$name.txt" 2>&1; echo " exit=$?" >> "$OUT/$name.txt"; }
try host "http://$HOST_ADDR/"
try other-host "http://198.51.100.1/"
try host-loopback "http://$HOST_LO/"
try gateway -X POST -H 'content-type: application/json' -d '{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' "http://127.0.0.1:$GW_PORT$GW_PREFIX/v1/messages"
try fetch -X POST -H 'content-type: application/json' -d '{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"http://'"$HOST_ADDR"'/answers.pdf"}}]}]}' "http://127.0.0.1:$GW_PORT$GW_PREFIX/v1/messages"
try listed -p "http://$HOST_ADDR/"
try unlisted -p "http://$OTHER_ADDR/"
env | grep -i '^https\?_proxy=' | sort > "$OUT/env.txt"
exit 0
`

// hostServer serves answer over HTTP on ip, an address of this host's.
func hostServer(t *testing.T, ip, answer string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, answer) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// nonLoopback is an IPv4 address of this host's that is not loopback, or "".
func nonLoopback() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// netLoop runs one iteration of a loop with network nw whose agent is netBot, with a model
// gateway (its model a stub) served as the run's will be (a netServer at the port it has on
// the host's loopback), and returns what the agent wrote and the run's folder.
func netLoop(t *testing.T, nw config.Network) (map[string]string, string) {
	if testing.Short() {
		t.Skip("runs the loop")
	}
	if err := sandbox.Namespaces(); err != nil {
		t.Skipf("no namespaces here: %v", err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	ip := nonLoopback()
	if ip == "" {
		t.Skip("this host has no non-loopback IPv4 address")
	}
	out := t.TempDir()
	host, other, hostLo := hostServer(t, ip, "host"), hostServer(t, ip, "other"), hostServer(t, "127.0.0.1", "host loopback")
	// The model gateway as the loop runs it: on the host's loopback, its model a stub.
	stub := modelstub.Anthropic(t, modelstub.Turn{Text: "unused: the agent's request has no tools"})
	g := startGateway(t, gatewayapi.Config{AnthropicURL: stub.URL, NoWebTools: nw.Isolated()})
	prefix, err := g.Scope("attempt")
	if err != nil {
		t.Fatal(err)
	}
	gw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.Serve(gw)
	gwPort := gw.Addr().(*net.TCPAddr).Port
	// Outside the sandbox the host's servers answer: the refusals below are the sandbox's.
	if b, err := exec.Command("curl", "-s", "-m", "10", "http://"+host+"/").Output(); err != nil || string(b) != "host" {
		t.Fatalf("unsandboxed curl of %s: %q %v", host, b, err)
	}
	for k, v := range map[string]string{"OUT": out, "HOST_ADDR": host, "OTHER_ADDR": other, "HOST_LO": hostLo, "GW_PORT": strconv.Itoa(gwPort), "GW_PREFIX": prefix} {
		t.Setenv(k, v)
	}
	if nw.Mode == config.NetworkHosts {
		nw.Hosts = []string{host}
	}
	r := netRunner(t, nw, out)
	// What the merge connects: the run's gateway as openNet's model server.
	r.net.servers = append([]netServer{{Name: "the model gateway", Port: gwPort, Serve: g.Serve}}, r.net.servers...)
	if _, err := r.loop(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, name := range []string{"host", "other-host", "host-loopback", "gateway", "fetch", "listed", "unlisted", "env"} {
		b, err := os.ReadFile(filepath.Join(out, name+".txt"))
		if err != nil {
			t.Fatalf("the agent wrote no %s.txt: %v", name, err)
		}
		got[name] = string(b)
	}
	t.Logf("the agent got: %q", got)
	// The request that asks the provider to fetch from the host (where code under test
	// could have posted the questions) never reaches it.
	if n := len(stub.Requests()); n != 1 {
		t.Errorf("the model stub got %d requests through the gateway, want the agent's one that asks it to reach nothing", n)
	}
	return got, r.dir
}

// netRunner opens a run of one iteration whose agent is netBot and may write out.
func netRunner(t *testing.T, nw config.Network, out string) *runner {
	t.Helper()
	repo := gittest.New(t)
	repo.WriteFiles(map[string]string{
		".gitignore": "/workspace/\n",
		"PROGRAM.md": "# Program\n",
		"hgate.yaml": "allow: [agent.sh]\nbenchmark:\n  tasks: {file: tasks.txt}\n  run: [\"sh\", \"check.sh\", \"{task}\"]\nloop:\n  agent: [\"sh\", \"bot.sh\"]\n  attempt_timeout: 2m\n  repair_attempts: 0\n",
		"tasks.txt":  "b1\nb2\n",
		"check.sh":   "out=$(sh agent.sh \"$1\")\n[ \"$out\" = \"solved $1\" ]\n",
		"agent.sh":   "case $1 in b1) echo \"solved $1\" ;; esac\n",
		"bot.sh":     netBot,
	})
	repo.Commit("init")
	g, err := gitguard.Open(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gate.LoadConfig(g, config.FileName, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	env := &gate.Env{Config: cfg, Repo: g}
	if _, err := gate.Prepare(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	lc := cfg.Loop
	lc.Iterations = 1
	lc.Sandbox.Network = nw
	lc.Sandbox.Writable = []string{out + "/"}
	r, done, err := start(context.Background(), Options{Env: env, Loop: lc, Log: &bytes.Buffer{}, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	return r
}

// TestNetworkModel: with network: model the agent reaches the gateway's listener and
// nothing else: not a server of this host's on its non-loopback address or its loopback,
// not another host, and it has no proxy.
func TestNetworkModel(t *testing.T) {
	got, dir := netLoop(t, config.Network{Mode: config.NetworkModel})
	if !strings.Contains(got["gateway"], `"text":"ok"`) || !strings.HasSuffix(got["gateway"], " exit=0\n") {
		t.Errorf("the gateway, from the agent's sandbox: %q", got["gateway"])
	}
	if !strings.Contains(got["fetch"], "a file the provider fetches from http://") || !strings.Contains(got["fetch"], "is refused") {
		t.Errorf("a document by URL through the gateway: %q, want it refused", got["fetch"])
	}
	for _, name := range []string{"host", "other-host", "host-loopback", "listed", "unlisted"} {
		if !strings.HasPrefix(got[name], " exit=") || strings.HasPrefix(got[name], " exit=0") {
			t.Errorf("%s, from the agent's sandbox: %q, want nothing and a failure", name, got[name])
		}
	}
	if got["env"] != "" {
		t.Errorf("the agent's proxy variables: %q, want none", got["env"])
	}
	var rc map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "run_config.json")); err != nil || json.Unmarshal(b, &rc) != nil || rc["sandbox_network"] != "model" {
		t.Errorf("run_config.json's sandbox_network: %v (%v)", rc["sandbox_network"], err)
	}
	if _, err := os.Stat(filepath.Join(dir, egressLogName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an egress log without hosts: %v", err)
	}
}

// TestNetworkHosts: with hosts, the agent also reaches the listed host through hgate's
// proxy, and an unlisted one is refused there and logged.
func TestNetworkHosts(t *testing.T) {
	got, dir := netLoop(t, config.Network{Mode: config.NetworkHosts})
	if !strings.HasPrefix(got["listed"], "host exit=0") {
		t.Errorf("the listed host, through the proxy: %q", got["listed"])
	}
	if !strings.Contains(got["gateway"], `"text":"ok"`) || !strings.HasSuffix(got["gateway"], " exit=0\n") {
		t.Errorf("the gateway, from the agent's sandbox: %q", got["gateway"])
	}
	if !strings.Contains(got["fetch"], "a file the provider fetches from http://") || !strings.Contains(got["fetch"], "is refused") {
		t.Errorf("a document by URL through the gateway: %q, want it refused", got["fetch"])
	}
	for _, name := range []string{"host", "other-host", "host-loopback", "unlisted"} {
		// A failure, or the proxy's refusal of a plain request (HTTP_PROXY's way).
		if reached := strings.HasSuffix(got[name], " exit=0\n"); reached && !strings.HasPrefix(got[name], "hgate egress: refused ") {
			t.Errorf("%s, from the agent's sandbox: %q, want a failure or the proxy's refusal", name, got[name])
		}
	}
	if !strings.Contains(got["env"], "https_proxy=http://127.0.0.1:") {
		t.Errorf("the agent's proxy variables: %q", got["env"])
	}
	log, _ := os.ReadFile(filepath.Join(dir, egressLogName))
	if !strings.Contains(string(log), "refused CONNECT "+os.Getenv("OTHER_ADDR")) {
		t.Errorf("egress.log: %q, want the unlisted host's refusal", log)
	}
}

func TestNetworkName(t *testing.T) {
	for nw, want := range map[*config.Network]string{
		{}: "all", {Mode: config.NetworkModel}: "model", {Mode: config.NetworkHosts, Hosts: []string{"a.example", "b.example:8443"}}: "hosts: a.example, b.example:8443",
	} {
		if got := networkName(*nw); got != want {
			t.Errorf("networkName(%+v) = %q, want %q", *nw, got, want)
		}
	}
}

// TestNetworkNeedsSandbox: network model or hosts with the sandbox off refuses to start.
func TestNetworkNeedsSandbox(t *testing.T) {
	for _, mode := range []string{config.NetworkModel, config.NetworkHosts} {
		_, err := sandboxState(config.Sandbox{Enabled: false, Network: config.Network{Mode: mode, Hosts: []string{"a.example"}}})
		var ns *NotStarted
		if !errors.As(err, &ns) || ns.Where != "loop.sandbox.network" {
			t.Errorf("%s without the sandbox: %v, want a refusal to start", mode, err)
		}
	}
	if st, err := sandboxState(config.Sandbox{Enabled: false, Network: config.Network{Mode: config.NetworkAll}}); err != nil || st != SandboxOff {
		t.Errorf("all without the sandbox: %q %v", st, err)
	}
}
