package client

import (
	"bufio"
	"maps"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Version is what nodes report as their nomad.version attribute (set by
// the ctlplane binary to its own version).
var Version = "0.1.0-dev"

// attributes are the node's attributes under Nomad's names: the host's
// fingerprint for a real client (one with a data directory), plausible
// values for a simulated node; then driver.<name> = "1" for each healthy
// driver, and Config.Attributes on top (tests build fleets with them).
func (c *Client) attributes() map[string]string {
	var a map[string]string
	if c.cfg.DataDir != "" {
		a = hostAttributes()
	} else {
		a = simulatedAttributes(c.cfg)
	}
	a["nomad.version"] = Version
	if host, _, err := net.SplitHostPort(c.httpAddr); err == nil && host != "" {
		a["unique.network.ip-address"] = host
	}
	for name, d := range c.drivers() {
		if d.Detected && d.Healthy {
			a["driver."+name] = "1"
		}
	}
	maps.Copy(a, c.cfg.Attributes)
	return a
}

// simulatedAttributes are a simulated node's: a Linux amd64 machine with
// the configured resources, named after the node.
func simulatedAttributes(cfg Config) map[string]string {
	cores := max(cfg.Resources.CPU/1000, 1)
	return map[string]string{
		"kernel.name":               "linux",
		"kernel.version":            "6.1.0",
		"kernel.arch":               "x86_64",
		"os.name":                   "ubuntu",
		"os.version":                "22.04",
		"cpu.arch":                  "amd64",
		"cpu.numcores":              strconv.Itoa(cores),
		"cpu.totalcompute":          strconv.Itoa(cfg.Resources.CPU),
		"cpu.frequency":             "1000",
		"cpu.modelname":             "ctlplane simulated CPU",
		"memory.totalbytes":         strconv.FormatInt(int64(cfg.Resources.MemoryMB)<<20, 10),
		"unique.hostname":           cfg.NodeName,
		"unique.network.ip-address": "127.0.0.1",
	}
}

// hostAttributes fingerprints the machine the client runs on.
func hostAttributes() map[string]string {
	a := map[string]string{
		"kernel.name":  runtime.GOOS,
		"cpu.arch":     runtime.GOARCH,
		"cpu.numcores": strconv.Itoa(runtime.NumCPU()),
	}
	if v := readTrim("/proc/sys/kernel/osrelease"); v != "" {
		a["kernel.version"] = v
	}
	if host, err := os.Hostname(); err == nil {
		a["unique.hostname"] = host
	}
	osr := keyValues("/etc/os-release", "=")
	if v := strings.Trim(osr["ID"], `"`); v != "" {
		a["os.name"] = v
	}
	if v := strings.Trim(osr["VERSION_ID"], `"`); v != "" {
		a["os.version"] = v
	}
	cpu := keyValues("/proc/cpuinfo", ":")
	if v := cpu["model name"]; v != "" {
		a["cpu.modelname"] = v
	}
	if mhz, err := strconv.ParseFloat(cpu["cpu MHz"], 64); err == nil && mhz > 0 {
		a["cpu.frequency"] = strconv.Itoa(int(mhz))
		a["cpu.totalcompute"] = strconv.Itoa(int(mhz) * runtime.NumCPU())
	}
	mem := keyValues("/proc/meminfo", ":")
	if f := strings.Fields(mem["MemTotal"]); len(f) > 0 {
		if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			a["memory.totalbytes"] = strconv.FormatInt(kb*1024, 10)
		}
	}
	return a
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// keyValues reads "key<sep>value" lines; the first of each key wins.
func keyValues(path, sep string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		k = strings.TrimSpace(k)
		if _, seen := out[k]; ok && !seen {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}
