//go:build unix

package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hgate/hgate/internal/timescale"
)

// tcpq is the attack scripts' localhost channel, a program on the scripts' PATH (no nc
// needed). The agent's side:
//
//	tcpq listen PORTFILE LOG [ANSWERS]
//
// listens on 127.0.0.1, writes its port to PORTFILE, and appends every line it receives to
// LOG; with ANSWERS, a file of "QUESTION ANSWER" lines, it replies the answer to a question
// it holds (an oracle); the line tcpq-stop ends it. The
// other side (the scripts' code under test uses bash's /dev/tcp instead):
//
//	tcpq ask PORT LINE
//
// sends LINE and prints the reply; it exits 1 when nothing listens.
//
//	tcpq listen-host ADDRFILE LOG [ANSWERS]
//
// is listen on this host's first non-loopback IPv4 address instead, whose IP:PORT it
// writes to ADDRFILE (a server of the host's own, outside the agent's loopback).
//
//	tcpq listen-unix SOCKET PATHFILE LOG
//
// is listen on the pathname Unix socket SOCKET instead (a service of the user's: a tmux
// server, the session bus), whose path it writes to PATHFILE; tcpq ask takes that path
// for PORT.
func tcpq() {
	args := os.Args[1:]
	switch {
	case len(args) == 4 && args[0] == "listen-unix":
		tcpqListen("unix", args[1], args[2], args[3], nil)
	case len(args) >= 3 && (args[0] == "listen" || args[0] == "listen-host"):
		answers := map[string]string{}
		if len(args) > 3 {
			answers = tcpqAnswers(args[3])
		}
		host := "127.0.0.1"
		if args[0] == "listen-host" {
			host = tcpqHostIP()
		}
		tcpqListen("tcp", net.JoinHostPort(host, "0"), args[1], args[2], answers)
	case len(args) == 3 && args[0] == "ask":
		os.Exit(tcpqAsk(args[1], args[2]))
	}
	fmt.Fprintln(os.Stderr, "usage: tcpq listen PORTFILE LOG [ANSWERS] | tcpq listen-host ADDRFILE LOG [ANSWERS] | tcpq listen-unix SOCKET PATHFILE LOG | tcpq ask PORT LINE")
	os.Exit(2)
}

// tcpqAnswers reads an oracle's "QUESTION ANSWER" lines.
func tcpqAnswers(file string) map[string]string {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcpq:", err)
		os.Exit(1)
	}
	answers := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if q, a, ok := strings.Cut(line, " "); ok {
			answers[q] = a
		}
	}
	return answers
}

// tcpqHostIP is the host's first non-loopback IPv4 address; tcpq exits 1 without one.
func tcpqHostIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	fmt.Fprintln(os.Stderr, "tcpq: this host has no non-loopback IPv4 address")
	os.Exit(1)
	return ""
}

// tcpqListen listens at addr and writes its port (IP:PORT for another host than
// 127.0.0.1; a unix socket's path) to portFile.
func tcpqListen(network, addr, portFile, logFile string, answers map[string]string) {
	l, err := net.Listen(network, addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcpq:", err)
		os.Exit(1)
	}
	log, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcpq:", err)
		os.Exit(1)
	}
	// Written whole then renamed, so that a reader never sees half a port.
	port := l.Addr().String()
	if a, ok := l.Addr().(*net.TCPAddr); ok && a.IP.IsLoopback() {
		port = fmt.Sprint(a.Port)
	}
	if err := os.WriteFile(portFile+".tmp", []byte(port+"\n"), 0o644); err != nil {
		os.Exit(1)
	}
	if err := os.Rename(portFile+".tmp", portFile); err != nil {
		os.Exit(1)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup // the connections accepted: tcpq-stop logs what came before it
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			line = strings.TrimSpace(line)
			if err != nil || line == "" {
				return
			}
			if line == "tcpq-stop" {
				wg.Done()
				wg.Wait()
				os.Exit(0)
			}
			mu.Lock()
			fmt.Fprintln(log, line)
			mu.Unlock()
			if a, ok := answers[line]; ok {
				fmt.Fprintln(c, a)
			}
		}()
	}
}

func tcpqAsk(port, line string) int {
	network, addr := "tcp", "127.0.0.1:"+port
	if strings.HasPrefix(port, "/") {
		network, addr = "unix", port
	}
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		return 1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timescale.D(10 * time.Second)))
	if _, err := fmt.Fprintln(c, line); err != nil {
		return 1
	}
	reply, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print(reply)
	return 0
}
