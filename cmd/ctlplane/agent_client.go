package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/hashicorp/go-hclog"
)

// isClientAgent says whether agent's arguments ask for a client agent.
func isClientAgent(args []string) bool {
	for _, a := range args {
		switch a {
		case "-client", "--client", "-client=true", "--client=true":
			return true
		}
	}
	return false
}

// runClientAgent runs a client node as its own process: it registers with
// the servers, runs its allocations' tasks (raw_exec when enabled, the
// test drivers only with -enable-test-drivers) and
// keeps its state in -data-dir. On SIGINT/SIGTERM it stops following the
// servers but leaves its tasks running: started again with the same
// -data-dir it re-attaches to them.
func runClientAgent(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("agent -client", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Bool("client", true, "run a client node (this mode)")
	servers := flags.String("servers", "", "HTTP addresses (host:port or URLs) of the servers, comma-separated; any of them answers")
	dataDir := flags.String("data-dir", "", "directory for the node's state and the allocation directories")
	host, _ := os.Hostname()
	name := flags.String("node", host, "node name")
	dc := flags.String("datacenter", "dc1", "datacenter of the node")
	tokenFile := flags.String("node-token-file", "", "file holding the introduction token, one with node:write (default: env CTLPLANE_NODE_TOKEN; CTLPLANE_TOKEN is not read)")
	configFile := flags.String("config-file", "", "client configuration file, HCL or JSON: keys as the flags with underscores, and Nomad's plugin \"raw_exec\" { config { enabled = true } }; flags win")
	httpAddr := flags.String("http-addr", "127.0.0.1:0", "address of the client's own HTTP API (task logs, forwarded by the servers); port 0 picks a free port")
	advertise := flags.String("http-advertise", "", "address (host:port) the servers reach the client's HTTP API at (default: the -http-addr listener's)")
	cpu := flags.Int("cpu-total-compute", runtime.NumCPU()*1000, "CPU (MHz) the node offers")
	mem := flags.Int("memory-mb", detectMemoryMB(), "memory (MB) the node offers")
	enableRawExec := flags.Bool("enable-raw-exec", false, "offer the raw_exec driver (off by default; or plugin \"raw_exec\" in -config-file): its tasks run as this agent's user and can act as the node")
	noRawExec := flags.Bool("disable-raw-exec", false, "never offer raw_exec, whatever -enable-raw-exec or the config file say")
	testDrivers := flags.Bool("enable-test-drivers", false, "offer the test drivers mock_driver and mock (off by default: tests and simulations only; agent -dev's nodes have them)")
	nodeClass := flags.String("node-class", "", "the node's class (constraints read it as ${node.class})")
	nodePool := flags.String("node-pool", "default", "the node's pool (${node.pool})")
	minPort := flags.Int("min-dynamic-port", 20000, "lowest port of the node's dynamic port range (Nomad's default)")
	maxPort := flags.Int("max-dynamic-port", 32000, "highest port of the node's dynamic port range (Nomad's default)")
	reservedPorts := flags.String("reserved-ports", "", `host ports never handed out to allocations, as Nomad's reserved_ports: "22,80,8000-8010"`)
	meta := metaFlag{}
	flags.Var(meta, "meta", "node metadata as key=value (${meta.key}); may be repeated")
	logLevel := flags.String("log-level", "info", "log level: trace, debug, info, warn, error")
	logJSON := flags.Bool("log-json", false, "log in JSON")
	if err := flags.Parse(args); err != nil {
		return 1
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %v\n", flags.Args())
		return 1
	}
	set := map[string]bool{}
	flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var pluginRawExec *bool
	if *configFile != "" {
		raw, err := readConfigFile(*configFile)
		if err == nil {
			pluginRawExec, err = takePluginBlocks(*configFile, raw)
		}
		if err == nil {
			err = applyConfigKeys(flags, *configFile, raw, set)
		}
		if err != nil {
			fmt.Fprintf(stderr, "Error: %v\n", err)
			return 1
		}
	}
	// Off unless enabled; -disable-raw-exec (from when it was on by
	// default) still wins.
	rawExec := (*enableRawExec || (pluginRawExec != nil && *pluginRawExec)) && !*noRawExec
	var urls []string
	for _, s := range strings.Split(*servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			urls = append(urls, s)
		}
	}
	if len(urls) == 0 {
		fmt.Fprintln(stderr, "Error: -servers is required with -client (e.g. -servers=127.0.0.1:8500)")
		return 1
	}
	if *dataDir == "" {
		fmt.Fprintln(stderr, "Error: -data-dir is required with -client")
		return 1
	}
	if *nodePool == "all" {
		// Nomad's check at agent start: "all" is every node, not a place.
		fmt.Fprintln(stderr, `Error: Invalid node pool: node is not allowed to register in node pool "all"`)
		return 1
	}
	level := hclog.LevelFromString(*logLevel)
	if level == hclog.NoLevel {
		fmt.Fprintf(stderr, "invalid -log-level %q\n", *logLevel)
		return 1
	}
	reserved, err := parseReservedPorts(*reservedPorts)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	if *minPort < 1 || *maxPort > 65535 || *minPort > *maxPort {
		fmt.Fprintf(stderr, "Error: invalid dynamic port range %d-%d: ports are 1 to 65535, the lowest first\n", *minPort, *maxPort)
		return 1
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "ctlplane", Level: level, JSONFormat: *logJSON, Output: stderr})
	token, err := introductionToken(*tokenFile, logger)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	c, err := client.New(client.Config{
		Servers: urls, Token: token, NodeName: *name, Datacenter: *dc, DataDir: *dataDir, RawExec: rawExec,
		HTTPAddr: *httpAddr, HTTPAdvertise: *advertise, Resources: api.Resources{CPU: *cpu, MemoryMB: *mem}, Logger: logger,
		NodeClass: *nodeClass, NodePool: *nodePool, Meta: meta, TestDrivers: *testDrivers,
		MinDynamicPort: *minPort, MaxDynamicPort: *maxPort, ReservedPorts: reserved,
	})
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigCh := make(chan os.Signal, 1)
	signal.Notify(sigCh, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigCh)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	logger.Info("client agent started", "node", *name, "node_id", c.NodeID(), "servers", strings.Join(urls, ","), "data_dir", *dataDir, "datacenter", *dc, "raw_exec", rawExec, "test_drivers", *testDrivers)
	select {
	case sig := <-sigCh:
		logger.Info("caught signal: stopping; the tasks keep running", "signal", sig.String())
		cancel()
		<-done
		return 0
	case err := <-done:
		if err != nil {
			fmt.Fprintf(stderr, "Error: %v\n", err)
			return 1
		}
		return 0
	}
}

// detectMemoryMB reads MemTotal from /proc/meminfo (4096 when unknown).
func detectMemoryMB() int {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 4096
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			if kb, err := strconv.Atoi(fields[1]); err == nil {
				return kb / 1024
			}
		}
	}
	return 4096
}

// metaFlag collects repeated -meta key=value flags.
type metaFlag map[string]string

func (m metaFlag) String() string { return fmt.Sprint(map[string]string(m)) }

func (m metaFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("invalid -meta %q: want key=value", v)
	}
	m[k] = val
	return nil
}
