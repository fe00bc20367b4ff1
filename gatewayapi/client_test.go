package gatewayapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hgate/hgate/gateway"
	"github.com/hgate/hgate/gatewayapi"
	"github.com/hgate/hgate/spend"
)

// TestMain plays hgate-gateway when the test binary is started under that name, and the
// gateway's owner (a loop) when HGATE_GATEWAY_OWNER names the gateway to start.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == gatewayapi.Binary {
		os.Exit(gateway.Main())
	}
	if bin := os.Getenv("HGATE_GATEWAY_OWNER"); bin != "" {
		os.Exit(owner(bin))
	}
	os.Exit(m.Run())
}

// owner starts the gateway, prints its pid and waits to be killed.
func owner(bin string) int {
	c, err := gatewayapi.StartBinary(bin, gatewayapi.Config{}, nil, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(c.Pid())
	select {}
}

// linkGateway links the test binary as hgate-gateway in a folder of its own.
func linkGateway(t *testing.T) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), gatewayapi.Binary)
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// provider is a stand-in for Anthropic's API: every message is a stream whose one event
// states 1000 input and 200 output tokens.
func provider(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":1000,\"output_tokens\":200}}}\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

// usageLog records the events the client passes on: how many carried tokens, and the
// last count.
type usageLog struct {
	mu     sync.Mutex
	tokens int
	last   gatewayapi.Scope
}

func (l *usageLog) on(u gatewayapi.Usage, count gatewayapi.Scope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u.Tokens != (spend.Tokens{}) {
		l.tokens++
	}
	l.last = count
}

func (l *usageLog) get() (int, gatewayapi.Scope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tokens, l.last
}

// post sends one message request to url and returns its status and body.
func post(t *testing.T, url string) (int, string) {
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"model":"claude-sonnet-4-5"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// serveScope starts c on a listener of the test's and returns the base URL of scope.
func serveScope(t *testing.T, c *gatewayapi.Client, scope string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c.Serve(l)
	prefix, err := c.Scope(scope)
	if err != nil || !strings.HasPrefix(prefix, "/s/") {
		t.Fatalf("Scope: %q %v", prefix, err)
	}
	return "http://" + l.Addr().String() + prefix
}

// TestClientCountsThroughTheProcess: requests reach the gateway's process through a
// listener of the test's, and the count comes back as events (each before the stream's
// line it counts reaches the client), as scopes and as a total; a charge adds to the
// total, and the budget refuses the request past it.
func TestClientCountsThroughTheProcess(t *testing.T) {
	var log usageLog
	cfg := gatewayapi.Config{AnthropicURL: provider(t).URL, Limits: gatewayapi.Limits{Tokens: 3000}}
	c, err := gatewayapi.StartBinary(linkGateway(t), cfg, log.on, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	url := serveScope(t, c, "attempt/1/T") + "/v1/messages"
	for i := 1; i <= 2; i++ {
		status, body := post(t, url)
		if n, _ := log.get(); status != 200 || !strings.Contains(body, "message_start") || n != i {
			t.Fatalf("response %d: status %d (%q), and the client had %d events with tokens, want %d", i, status, body, n, i)
		}
	}
	if err := c.Charge(spend.Spend{Tokens: spend.Tokens{Input: 1000}}); err != nil {
		t.Fatal(err)
	}
	if status, body := post(t, url); status != 403 {
		t.Fatalf("past the budget: status %d (%q), want 403", status, body)
	}
	checkCounts(t, c, &log)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := c.Total(); err == nil {
		t.Fatal("a closed gateway answered")
	}
}

// checkCounts: the scope counted two responses and refused one on the budget, the last
// event said as much, and the total holds the charge too.
func checkCounts(t *testing.T, c *gatewayapi.Client, log *usageLog) {
	one := spend.Tokens{Input: 1000, Output: 200}
	scopes, err := c.Scopes()
	if got := scopes["attempt/1/T"]; err != nil || got.Tokens != one.Add(one) || got.Requests != 2 || got.Budget != 1 {
		t.Fatalf("Scopes: %+v %v", scopes, err)
	}
	if _, last := log.get(); last.Tokens != one.Add(one) {
		t.Fatalf("the last event's count is %+v, want both responses'", last)
	}
	tot, err := c.Total()
	if err != nil || tot.Tokens.Total() != 3400 {
		t.Fatalf("Total: %+v %v, want 3400 tokens (2400 counted, 1000 charged)", tot, err)
	}
}

// TestGatewayEndsWithItsOwner: the gateway's owner SIGKILLed (no Close), the gateway
// exits: it leaves no orphan holding the provider's key and the agent's connections.
func TestGatewayEndsWithItsOwner(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "HGATE_GATEWAY_OWNER="+linkGateway(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil || pid <= 0 {
		cmd.Process.Kill()
		t.Fatalf("the owner printed %q: %v %v", line, err, perr)
	}
	if !alive(pid) {
		t.Fatalf("the gateway %d is not running while its owner is", pid)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for deadline := time.Now().Add(time.Minute); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
			t.Fatalf("the gateway %d still runs a minute after its owner was killed", pid)
		}
	}
}

// alive: pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
