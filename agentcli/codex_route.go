package agentcli

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hgate/hgate/internal/fsafe"
	"github.com/hgate/hgate/internal/lazyre"
)

// gatewayProvider is the name of the model provider the codex adapter defines for the
// gateway, and gatewayKeyEnv the variable codex reads its key from.
const (
	gatewayProvider = "hgate_gateway"
	gatewayKeyEnv   = "HGATE_GATEWAY_KEY"
)

// Upstream implements Routed: the provider codex's config.toml selects (model_provider),
// its base_url and the key in its env_key variable; the built-in openai provider at
// OPENAI_BASE_URL (api.openai.com when unset) with OPENAI_API_KEY. A ChatGPT login (no
// key) is not routed: codex sends it to ChatGPT's own backend, not the OpenAI API.
func (Codex) Upstream() (Upstream, bool) {
	p := readCodexProvider()
	if p.name == "" || p.name == "openai" {
		key := os.Getenv("OPENAI_API_KEY")
		if key == "" {
			return Upstream{Why: "codex has no OPENAI_API_KEY (a ChatGPT login is not routed)"}, false
		}
		return Upstream{API: "openai", URL: os.Getenv("OPENAI_BASE_URL"), Key: key, KeyEnv: "OPENAI_API_KEY"}, true
	}
	if p.baseURL == "" || p.wireAPI != "" && p.wireAPI != "responses" {
		return Upstream{Why: "codex's model provider " + p.name + " has no base_url, or a wire_api other than responses"}, false
	}
	u := Upstream{API: "openai", URL: p.baseURL}
	if p.envKey != "" {
		u.Key, u.KeyEnv = os.Getenv(p.envKey), p.envKey
	}
	return u, true
}

// Route implements Routed. A provider of the user's config.toml keeps its name, its
// base_url set to the gateway on the command line (-c model_providers.<name>.base_url),
// so the session codex records names the user's provider and a resume by hand reaches it
// directly. The built-in openai provider cannot be given another URL (codex 0.169.0 does
// not read OPENAI_BASE_URL): a provider of hgate's stands in for it, the Responses API at
// the gateway, its key in HGATE_GATEWAY_KEY.
func (Codex) Route(args []string, via Via) ([]string, []string) {
	if len(args) < 2 || args[1] != "exec" {
		return args, nil
	}
	var noWeb []string
	if via.NoWebTools {
		// codex asks for the provider's web_search tool in every request unless told not to.
		noWeb = []string{"-c", `web_search="disabled"`}
	}
	base := via.Base
	if p := readCodexProvider(); p.name != "" && p.name != "openai" {
		kv := []string{"-c", "model_providers." + p.name + ".base_url=" + tomlValue(base+"/v1")}
		return slices.Insert(slices.Clone(args), 2, append(kv, noWeb...)...), nil
	}
	key := "model_providers." + gatewayProvider + "."
	kv := []string{"-c", "model_provider=" + tomlValue(gatewayProvider),
		"-c", key + "name=" + tomlValue(gatewayProvider), "-c", key + "base_url=" + tomlValue(base+"/v1"),
		"-c", key + "wire_api=\"responses\"", "-c", key + "env_key=" + tomlValue(gatewayKeyEnv)}
	kv = append(kv, noWeb...)
	placeholder := ""
	if via.Held {
		placeholder = KeyPlaceholder
	}
	return slices.Insert(slices.Clone(args), 2, kv...), []string{gatewayKeyEnv + "=" + placeholder}
}

// codexProvider is what codex's config.toml says of the model provider it uses.
type codexProvider struct{ name, baseURL, envKey, wireAPI string }

var tomlString = lazyre.New(`^([A-Za-z0-9_.]+)\s*=\s*["']([^"']*)["']`)

// readCodexProvider reads the top-level model_provider of codex's config.toml and that
// provider's table ([model_providers.<name>]); a missing file selects the built-in one.
func readCodexProvider() codexProvider {
	dir, err := userCodexHome()
	if err != nil {
		return codexProvider{}
	}
	f, err := fsafe.Open(filepath.Join(dir, "config.toml"), 1<<20) // the agent's CLI home: by descriptor
	if err != nil {
		return codexProvider{}
	}
	defer f.Close()
	var p codexProvider
	table := ""
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			table = strings.Trim(line, "[] ")
			continue
		}
		if m := tomlString.Get().FindStringSubmatch(line); m != nil {
			vals[strings.TrimPrefix(table+"."+m[1], ".")] = m[2]
		}
	}
	p.name = vals["model_provider"]
	t := "model_providers." + p.name + "."
	p.baseURL, p.envKey, p.wireAPI = vals[t+"base_url"], vals[t+"env_key"], vals[t+"wire_api"]
	return p
}
