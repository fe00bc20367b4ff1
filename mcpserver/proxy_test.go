package mcpserver

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxy: the proxy passes messages both ways unchanged and logs one line per
// tools/call — keys and sizes of its arguments, never their values; a call the server
// never answers is answered by the proxy with an error and logged as a timeout.
func TestProxy(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.jsonl")
	server := `while IFS= read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
	case "$line" in
	*'"name":"lookup"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}\n' "$id" ;;
	*'"name":"bad"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"isError":true,"content":[]}}\n' "$id" ;;
	esac
done`
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int)
	go func() {
		done <- Proxy([]string{"--server", "s", "--log", log, "--iteration", "2", "--cwd", dir, "--tool-timeout", "100ms", "--", "sh", "-c", server}, inR, outW, io.Discard)
		outW.Close()
	}()
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":{"q":"secret value","n":12}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bad","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hang"}}`,
		// Longer than a message the proxy reads: passed on unread, and answered.
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"lookup","arguments":{"q":"` + strings.Repeat("x", 2*maxLine) + `"}}}`,
	} {
		if _, err := io.WriteString(inW, m+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(outR)
	var got []string
	sc.Buffer(nil, 4*maxLine)
	for len(got) < 4 && sc.Scan() {
		got = append(got, sc.Text())
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	<-done
	if len(got) != 4 || !strings.Contains(got[0], `"id":1,"result"`) || !strings.Contains(got[2]+got[3], "did not answer within 100ms") || !strings.Contains(got[2]+got[3], `"id":4,"result"`) {
		t.Fatalf("the client got:\n%s", strings.Join(got, "\n"))
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret") {
		t.Fatalf("the log holds an argument's value:\n%s", data)
	}
	want := map[string]string{"lookup": "completed", "bad": "error", "hang": "timeout"}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 {
		t.Fatalf("log:\n%s", data)
	}
	for _, l := range lines {
		var c callLine
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatal(err)
		}
		if c.Status != want[c.Tool] || c.Server != "s" || c.Iteration != 2 || c.Source != "agent" {
			t.Fatalf("line %s: want status %s", l, want[c.Tool])
		}
		if c.Tool == "lookup" && (strings.Join(c.ArgumentKeys, ",") != "n,q" || c.ArgumentSizes["q"] != len(`"secret value"`)) {
			t.Fatalf("lookup's arguments: %s", l)
		}
	}
}
