package cleanroom

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/hgate/hgate/config"
)

// TestSocketsOf: the sockets tasks may connect to are clean_room.sockets, expanded as
// read's paths are, and a Harbor benchmark's on Docker the engine's (DOCKER_HOST's path
// when it names one); nothing else.
func TestSocketsOf(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	root := "/repo"
	for _, tc := range []struct {
		name, dockerHost string
		sockets          []string
		harbor           *config.Harbor
		want             []string
	}{
		{name: "none", want: nil},
		{name: "named", sockets: []string{"/run/m.sock", "~/s.sock", "var/x.sock"}, want: []string{"/run/m.sock", "/home/u/s.sock", filepath.Join(root, "var/x.sock")}},
		{name: "harbor docker", harbor: &config.Harbor{}, want: []string{"/var/run/docker.sock", "/run/docker.sock"}},
		{name: "harbor DOCKER_HOST", dockerHost: "unix:///srv/d.sock", harbor: &config.Harbor{Env: "docker"}, want: []string{"/srv/d.sock"}},
		{name: "harbor tcp DOCKER_HOST", dockerHost: "tcp://10.0.0.1:2375", harbor: &config.Harbor{}, want: []string{"/var/run/docker.sock", "/run/docker.sock"}},
		{name: "harbor cloud", harbor: &config.Harbor{Env: "modal"}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DOCKER_HOST", tc.dockerHost)
			c := config.Default()
			c.CleanRoom.Sockets, c.Benchmark.Harbor = tc.sockets, tc.harbor
			got, err := socketsOf(&c, root)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
