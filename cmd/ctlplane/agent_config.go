package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl"
)

// secretFlag is a flag holding a secret. Besides the flag itself (visible in
// ps), the secret may come from the file named by -<name>-file or from the
// environment variable env.
type secretFlag struct {
	name  string
	env   string
	value *string
	file  *string
}

func addSecretFlag(flags *flag.FlagSet, value *string, name, env, usage string) secretFlag {
	s := secretFlag{name: name, env: env, value: value, file: new(string)}
	flags.StringVar(value, name, "", usage+" (prefer -"+name+"-file or env "+env+": flags show in ps)")
	flags.StringVar(s.file, name+"-file", "", "file holding -"+name)
	return s
}

// applyAgentSources fills in what the command line left unset: first the
// secrets' environment variables, then the config file (HCL or JSON, keys
// as the flags with underscores, e.g. data_dir, acl_enabled,
// tls_ca_file); then reads secrets from their files. The command line wins.
func applyAgentSources(flags *flag.FlagSet, configFile string, secrets []secretFlag) error {
	set := map[string]bool{}
	flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, s := range secrets {
		if set[s.name] || set[s.name+"-file"] {
			continue
		}
		if v := os.Getenv(s.env); v != "" {
			*s.value = v
			set[s.name], set[s.name+"-file"] = true, true
		}
	}
	if configFile != "" {
		if err := applyConfigFile(flags, configFile, set); err != nil {
			return err
		}
	}
	for _, s := range secrets {
		if *s.file == "" {
			continue
		}
		if *s.value != "" {
			return fmt.Errorf("give -%s or -%s-file, not both", s.name, s.name)
		}
		buf, err := os.ReadFile(*s.file)
		if err != nil {
			return fmt.Errorf("failed to read -%s-file: %w", s.name, err)
		}
		if *s.value = strings.TrimSpace(string(buf)); *s.value == "" {
			return fmt.Errorf("-%s-file %s is empty", s.name, *s.file)
		}
	}
	return nil
}

// applyConfigFile sets every flag the file names, unless the command line
// (or an environment variable) already did.
func applyConfigFile(flags *flag.FlagSet, path string, set map[string]bool) error {
	raw, err := readConfigFile(path)
	if err != nil {
		return err
	}
	return applyConfigKeys(flags, path, raw, set)
}

// readConfigFile decodes an HCL or JSON config file.
func readConfigFile(path string) (map[string]any, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the config file: %w", err)
	}
	var raw map[string]any
	if err := hcl.Unmarshal(buf, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	return raw, nil
}

// applyConfigKeys sets the flag each key names, unless already set.
func applyConfigKeys(flags *flag.FlagSet, path string, raw map[string]any, set map[string]bool) error {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		name := strings.ReplaceAll(key, "_", "-")
		f := flags.Lookup(name)
		if f == nil || name == "config-file" {
			return fmt.Errorf("config file %s: unknown key %q", path, key)
		}
		if set[name] {
			continue
		}
		values, err := configValues(raw[key])
		if err != nil {
			return fmt.Errorf("config file %s: key %q: %v", path, key, err)
		}
		for _, v := range values {
			if err := flags.Set(name, v); err != nil {
				// The flag package's error may quote the value: say only which key.
				return fmt.Errorf("config file %s: invalid value for key %q", path, key)
			}
		}
	}
	return nil
}

// configValues turns a decoded value into flag values: a list (e.g. join)
// gives one per element.
func configValues(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case bool:
		return []string{strconv.FormatBool(x)}, nil
	case int:
		return []string{strconv.Itoa(x)}, nil
	case int64:
		return []string{strconv.FormatInt(x, 10)}, nil
	case float64:
		return []string{strconv.FormatFloat(x, 'f', -1, 64)}, nil
	case []any:
		var out []string
		for _, e := range x {
			vs, err := configValues(e)
			if err != nil {
				return nil, err
			}
			out = append(out, vs...)
		}
		return out, nil
	}
	return nil, errors.New("want a string, number, boolean or list (blocks are not supported)")
}
