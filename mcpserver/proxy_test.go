package mcpserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// proxyServer is this test binary (SMOKE_TEST_SERVER=proxy) as a server that answers
// tools/call of lookup and bad (with isError), and never hang. It is not a shell loop: sh
// reads a line a byte at a time, and TestProxy sends one of 2 MiB.
func proxyServer(t *testing.T) []string {
	t.Setenv("SMOKE_TEST_SERVER", "proxy")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{self}
}

var proxyID = regexp.MustCompile(`"id":([0-9]+)`)

// proxyTestServer is proxyServer's body, reading r and answering on w.
func proxyTestServer(r io.Reader, w io.Writer) int {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		id := ""
		if m := proxyID.FindStringSubmatch(line); m != nil {
			id = m[1]
		}
		switch {
		case strings.Contains(line, `"name":"lookup"`):
			fmt.Fprintf(w, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n", id)
		case strings.Contains(line, `"name":"bad"`):
			fmt.Fprintf(w, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"isError\":true,\"content\":[]}}\n", id)
		}
		if err != nil {
			return 0
		}
	}
}

// runProxy sends msgs through a proxy with the tool timeout given, reads want answers,
// and returns them with the log's lines.
func runProxy(t *testing.T, timeout string, want int, msgs ...string) ([]string, []callLine) {
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.jsonl")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	args := append([]string{"--server", "s", "--log", log, "--iteration", "2", "--cwd", dir, "--tool-timeout", timeout, "--"}, proxyServer(t)...)
	done := make(chan int)
	go func() {
		done <- Proxy(args, inR, outW, io.Discard)
		outW.Close()
	}()
	go func() {
		for _, m := range msgs {
			if _, err := io.WriteString(inW, m+"\n"); err != nil {
				return
			}
		}
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 4*maxLine)
	var got []string
	for len(got) < want && sc.Scan() {
		got = append(got, sc.Text())
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	<-done
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret") {
		t.Fatalf("the log holds an argument's value:\n%s", data)
	}
	var lines []callLine
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c callLine
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		lines = append(lines, c)
	}
	return got, lines
}

// TestProxy: the proxy passes messages both ways unchanged and logs one line per
// tools/call — keys and sizes of its arguments, never their values, completed or error; a
// line longer than it reads is passed on unread.
func TestProxy(t *testing.T) {
	got, lines := runProxy(t, "10m", 3,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":{"q":"secret value","n":12}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bad","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"lookup","arguments":{"q":"`+strings.Repeat("x", 2*maxLine)+`"}}}`)
	if len(got) != 3 || got[0] != `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}` || !strings.Contains(got[2], `"id":4,"result"`) {
		t.Fatalf("the client got:\n%s", strings.Join(got, "\n"))
	}
	if len(lines) != 2 {
		t.Fatalf("log: %+v", lines)
	}
	want := map[string]string{"lookup": "completed", "bad": "error"}
	for _, c := range lines {
		if c.Status != want[c.Tool] || c.Server != "s" || c.Iteration != 2 || c.Source != "agent" {
			t.Fatalf("line %+v: want status %s", c, want[c.Tool])
		}
		if c.Tool == "lookup" && (strings.Join(c.ArgumentKeys, ",") != "n,q" || c.ArgumentSizes["q"] != len(`"secret value"`)) {
			t.Fatalf("lookup's arguments: %+v", c)
		}
	}
}

// TestProxyTimeout: a call the server never answers is answered by the proxy with an
// error at the tool timeout, and logged as a timeout.
func TestProxyTimeout(t *testing.T) {
	got, lines := runProxy(t, "50ms", 1, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hang","arguments":{"q":"secret"}}}`)
	if len(got) != 1 || !strings.Contains(got[0], `"id":3,"error"`) || !strings.Contains(got[0], "did not answer within 50ms") {
		t.Fatalf("the client got:\n%s", strings.Join(got, "\n"))
	}
	if len(lines) != 1 || lines[0].Status != "timeout" || lines[0].Tool != "hang" {
		t.Fatalf("log: %+v", lines)
	}
}
