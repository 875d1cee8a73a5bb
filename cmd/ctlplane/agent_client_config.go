package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// nodeTokenEnv holds the client's introduction token when no file does.
const nodeTokenEnv = "CTLPLANE_NODE_TOKEN"

// tokenEnvs are removed from the client agent's environment: tasks run as
// its user and could read them from /proc/PID/environ. The operator's own
// tokens are never read by the client.
var tokenEnvs = []string{nodeTokenEnv, "CTLPLANE_TOKEN", "NOMAD_TOKEN"}

// takePluginBlocks removes Nomad's plugin blocks from a decoded client
// config file and returns what they say about raw_exec (nil: nothing):
//
//	plugin "raw_exec" { config { enabled = true } }
func takePluginBlocks(path string, raw map[string]any) (*bool, error) {
	v, ok := raw["plugin"]
	if !ok {
		return nil, nil
	}
	delete(raw, "plugin")
	var rawExec *bool
	for _, plugins := range blocks(v) {
		for _, name := range sortedKeys(plugins) {
			if name != "raw_exec" {
				return nil, fmt.Errorf("config file %s: plugin %q: only the raw_exec plugin can be configured (mock_driver is always on)", path, name)
			}
			for _, body := range blocks(plugins[name]) {
				for _, key := range sortedKeys(body) {
					if key != "config" {
						return nil, fmt.Errorf("config file %s: plugin \"raw_exec\": unknown key %q (want config { enabled = true })", path, key)
					}
					for _, cfg := range blocks(body[key]) {
						for _, k := range sortedKeys(cfg) {
							switch k {
							case "enabled":
								on, ok := cfg[k].(bool)
								if !ok {
									return nil, fmt.Errorf("config file %s: plugin \"raw_exec\": enabled must be true or false", path)
								}
								rawExec = &on
							case "no_cgroups":
								// Nomad's; there are no cgroups here.
							default:
								return nil, fmt.Errorf("config file %s: plugin \"raw_exec\": unknown config key %q (known: enabled, no_cgroups)", path, k)
							}
						}
					}
				}
			}
		}
	}
	return rawExec, nil
}

// blocks is a decoded HCL/JSON block: a list of objects.
func blocks(v any) []map[string]any {
	switch x := v.(type) {
	case []map[string]any:
		return x
	case map[string]any:
		return []map[string]any{x}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// introductionToken is the token the client registers its node with: from
// file when given, else from CTLPLANE_NODE_TOKEN. Every token variable is
// then removed from the agent's environment, also from the block the
// kernel shows in /proc/PID/environ (a warning when that fails).
func introductionToken(file string, logger hclog.Logger) (string, error) {
	token := os.Getenv(nodeTokenEnv)
	if file != "" {
		buf, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("failed to read -node-token-file: %w", err)
		}
		if token = strings.TrimSpace(string(buf)); token == "" {
			return "", fmt.Errorf("-node-token-file %s is empty", file)
		}
	}
	present, err := removeEnv(tokenEnvs, logger)
	if err != nil {
		return "", err
	}
	if token == "" && (slices.Contains(present, "CTLPLANE_TOKEN") || slices.Contains(present, "NOMAD_TOKEN")) {
		logger.Warn("the client agent does not read CTLPLANE_TOKEN or NOMAD_TOKEN: give its node:write token with -node-token-file or " + nodeTokenEnv)
	}
	return token, nil
}

// removeEnv removes the variables set among names from the environment,
// also from the block the kernel shows in /proc/PID/environ (a warning
// when that fails), and says which were set.
func removeEnv(names []string, logger hclog.Logger) ([]string, error) {
	var present []string
	for _, name := range names {
		if _, ok := os.LookupEnv(name); ok {
			present = append(present, name)
			if err := os.Unsetenv(name); err != nil {
				return nil, fmt.Errorf("removing %s from the environment: %w", name, err)
			}
		}
	}
	if len(present) == 0 {
		return nil, nil
	}
	if err := scrubInitialEnviron(present...); err != nil {
		logger.Warn("could not blank secret variables in /proc/self/environ; prefer the -...-file flags", "variables", strings.Join(present, ","), "error", err)
	}
	return present, nil
}
