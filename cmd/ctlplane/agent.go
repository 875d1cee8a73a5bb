package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/server"
	ctlagent "github.com/ctlplane/ctlplane/server/agent"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/hashicorp/go-hclog"
)

func runAgent(args []string, stdout, stderr io.Writer) int {
	if isClientAgent(args) {
		return runClientAgent(args, stdout, stderr)
	}
	cfg := server.DefaultConfig()
	flags := flag.NewFlagSet("agent", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.BoolVar(&cfg.Dev, "dev", false, "run one in-memory server on 127.0.0.1:8500, for development")
	flags.BoolVar(&cfg.DevListenAny, "dev-listen-any", false, "let -dev listen on a non-loopback -http-addr (anyone who reaches it can run commands: ACLs are off and raw_exec on)")
	flags.StringVar(&cfg.DataDir, "data-dir", "", "directory for the Raft log, snapshots and node ID")
	flags.StringVar(&cfg.NodeName, "node", cfg.NodeName, "name of this server")
	bind := flags.String("bind", "", "Raft address host:port (default 127.0.0.1:8300; -dev: a free port)")
	flags.StringVar(&cfg.AdvertiseAddr, "advertise", "", "Raft address other servers reach this one at (default: the -bind address)")
	flags.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "HTTP API address host:port (port 0 picks a free port)")
	flags.IntVar(&cfg.BootstrapExpect, "bootstrap-expect", 0, "number of servers to wait for before bootstrapping the cluster")
	flags.Var((*stringList)(&cfg.Join), "join", "HTTP address (host:port) of another server to form or join a cluster with; repeatable")
	raftTimeout := flags.Duration("raft-timeout", 0, "Raft heartbeat and election timeout (default 1s; -dev: 100ms)")
	flags.StringVar(&cfg.RaftLogStore, "raft-log-store", server.LogStoreBoltDB, "Raft log store: boltdb (bbolt, the default) or wal (raft-wal segment files); a data directory keeps the one it was created with")
	flags.BoolVar(&cfg.RaftBolt.NoFreelistSync, "raft-boltdb-no-freelist-sync", cfg.RaftBolt.NoFreelistSync, "boltdb log store: do not write bbolt's freelist on every commit (rebuilt by a scan at start); =false writes it")
	flags.BoolVar(&cfg.RaftBolt.FreelistMap, "raft-boltdb-freelist-map", cfg.RaftBolt.FreelistMap, "boltdb log store: bbolt's hashmap freelist instead of the array one; =false: the array one")
	flags.IntVar(&cfg.RaftBolt.InitialMmapSize, "raft-boltdb-mmap-size", cfg.RaftBolt.InitialMmapSize, "boltdb log store: bytes to map up front (0: bbolt's default)")
	flags.Uint64Var(&cfg.SnapshotThreshold, "snapshot-threshold", cfg.SnapshotThreshold, "log entries between Raft snapshots")
	flags.DurationVar(&cfg.SnapshotInterval, "snapshot-interval", cfg.SnapshotInterval, "how often to check whether a snapshot is due")
	aclEnabled := flags.String("acl-enabled", "", "turn access control on or off (default: on, off with -dev)")
	secrets := []secretFlag{
		addSecretFlag(flags, &cfg.ACLInitialManagementToken, "acl-initial-management-token", "CTLPLANE_ACL_INITIAL_MANAGEMENT_TOKEN", "secret of a management token to create at first start"),
		addSecretFlag(flags, &cfg.JoinToken, "join-token", "CTLPLANE_JOIN_TOKEN", "without TLS: management token sent when joining a cluster (default: the initial management token)"),
	}
	configFile := flags.String("config-file", "", "agent configuration file, HCL or JSON: keys as the flags with underscores (data_dir, acl_enabled, tls_ca_file, join = [...]); flags win")
	flags.StringVar(&cfg.Datacenter, "datacenter", cfg.Datacenter, "datacenter name")
	flags.StringVar(&cfg.TLS.CAFile, "tls-ca-file", "", "CA certificate (PEM) that signs the servers' certificates; with -tls-cert-file and -tls-key-file turns on mutual TLS between servers and HTTPS")
	flags.StringVar(&cfg.TLS.CertFile, "tls-cert-file", "", "this server's certificate (PEM), from `ctlplane tls cert create -server`")
	flags.StringVar(&cfg.TLS.KeyFile, "tls-key-file", "", "key of -tls-cert-file (PEM)")
	flags.StringVar(&cfg.HTTPSAddr, "https-addr", "", "HTTPS-only API address host:port (needs the -tls-* files; with them the HTTP address answers HTTPS too)")
	flags.BoolVar(&cfg.InsecureRaft, "insecure-raft", false, "allow forming or joining a multi-server cluster without TLS (anyone who reaches the Raft port can take the cluster over)")
	flags.IntVar(&cfg.HTTPMaxConnsPerClient, "http-max-conns-per-client", cfg.HTTPMaxConnsPerClient, "open HTTP connections allowed per client IP (0: no limit); over it, 429")
	flags.IntVar(&cfg.EventBufferSize, "event-buffer-size", cfg.EventBufferSize, "how many Raft entries' events the event stream keeps for subscribers to resume from (-1: no event stream)")
	flags.BoolVar(&cfg.EnableDebug, "enable-debug", false, "serve Go's profiler under /debug/pprof/ (management token required when ACLs are on)")
	devNodes := flags.Int("dev-nodes", -1, "simulated client nodes (mock_driver) to run in this process (default: 1 with -dev, else 0)")
	flags.IntVar(&cfg.DevMinDynamicPort, "min-dynamic-port", 20000, "lowest port of the dynamic port range of -dev's client node (Nomad's default)")
	flags.IntVar(&cfg.DevMaxDynamicPort, "max-dynamic-port", 32000, "highest port of the dynamic port range of -dev's client node (Nomad's default)")
	var devGroups devNodeGroupsFlag
	flags.Var(&devGroups, "dev-node-group", "more simulated nodes alike, as count=N,name=NAME,dc=DC,class=CLASS,pool=POOL,cpu=MHZ,memory=MB,meta.KEY=V,attr.KEY=V; may be repeated")
	flags.IntVar(&cfg.MaxNodes, "max-nodes", 10000, "client nodes that may be registered; a new node over it is refused with 400")
	flags.IntVar(&cfg.SchedulerWorkers, "scheduler-workers", 0, "evaluations the leader schedules at once (default: the number of CPUs)")
	flags.IntVar(&cfg.SchedulerWorkers, "num-schedulers", 0, "the same as -scheduler-workers (Nomad's name)")
	flags.BoolVar(&cfg.LimitedPlacement, "limited-placement", false, "place as Nomad's service stack: score ⌈log2 n⌉ nodes of a shuffled order per placement (the job's anti-affinity spreads it), not every node for the tightest fit")
	flags.DurationVar(&cfg.GCInterval, "gc-interval", 5*time.Minute, "how often the leader garbage-collects finished evaluations, allocations, deployments, jobs and nodes")
	flags.DurationVar(&cfg.EvalGCThreshold, "eval-gc-threshold", time.Hour, "how long an evaluation (and its allocations) must have been terminal before it is collected")
	flags.DurationVar(&cfg.DeploymentGCThreshold, "deployment-gc-threshold", time.Hour, "how long a deployment must have been finished before it is collected")
	flags.DurationVar(&cfg.JobGCThreshold, "job-gc-threshold", 4*time.Hour, "how long a stopped, dead job (and everything of it) must have been finished before it is collected")
	flags.DurationVar(&cfg.NodeGCThreshold, "node-gc-threshold", 24*time.Hour, "how long a node must have been down before it is collected")
	flags.IntVar(&cfg.MaxJobAllocs, "max-job-allocs", jobs.DefaultMaxJobAllocs, "allocations one job may ask for in all (the sum of its task groups' Count); over it, 400")
	gcFloor := flags.Int("gc-heap-floor-mb", 512, "let the heap grow to at least this many MiB past the live heap before a garbage collection (heap goal max(live×2, live+floor), never past GOMEMLIMIT; 0: Go's default, GOGC)")
	flags.BoolVar(&cfg.GCWhenIdle, "gc-when-idle", true, "collect garbage once the agent has been idle for 300 ms with half its heap headroom used, so that a burst of work after a quiet spell (thousands of blocked queries woken by one write) does not meet a collection")
	logLevel := flags.String("log-level", "info", "log level: trace, debug, info, warn, error")
	logJSON := flags.Bool("log-json", false, "log in JSON")
	if err := flags.Parse(args); err != nil {
		return 1
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %v\n", flags.Args())
		return 1
	}
	if err := applyAgentSources(flags, *configFile, secrets); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	level := hclog.LevelFromString(*logLevel)
	if level == hclog.NoLevel {
		fmt.Fprintf(stderr, "invalid -log-level %q\n", *logLevel)
		return 1
	}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "ctlplane", Level: level, JSONFormat: *logJSON, Output: stderr})
	// Read by now: the secrets leave the environment, where the tasks of a
	// dev agent's raw_exec client could read them (/proc/PPID/environ).
	envs := []string{"CTLPLANE_TOKEN", "NOMAD_TOKEN"}
	for _, s := range secrets {
		envs = append(envs, s.env)
	}
	if _, err := removeEnv(envs, cfg.Logger); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}

	cfg.ACLEnabled = !cfg.Dev
	if *aclEnabled != "" {
		on, err := strconv.ParseBool(*aclEnabled)
		if err != nil {
			fmt.Fprintf(stderr, "invalid -acl-enabled %q: use true or false\n", *aclEnabled)
			return 1
		}
		cfg.ACLEnabled = on
	}
	if cfg.MaxJobAllocs < 1 {
		fmt.Fprintf(stderr, "invalid -max-job-allocs %d: it must be at least 1\n", cfg.MaxJobAllocs)
		return 1
	}
	if *gcFloor < 0 {
		fmt.Fprintf(stderr, "invalid -gc-heap-floor-mb %d: use 0 (off) or more\n", *gcFloor)
		return 1
	}
	if cfg.DevMinDynamicPort < 1 || cfg.DevMaxDynamicPort > 65535 || cfg.DevMinDynamicPort > cfg.DevMaxDynamicPort {
		fmt.Fprintf(stderr, "invalid dynamic port range %d-%d: ports are 1 to 65535, the lowest first\n", cfg.DevMinDynamicPort, cfg.DevMaxDynamicPort)
		return 1
	}
	cfg.GCHeapFloor = uint64(*gcFloor) << 20
	cfg.BindAddr = *bind
	cfg.RaftTimeout = *raftTimeout
	cfg.DevNodes = *devNodes
	cfg.DevNodeGroups = devGroups

	// Signals are caught from before the start: a dev agent's start waits
	// for its nodes' registration, and a SIGTERM then must still end it
	// cleanly (it is acted on once the start returns).
	sigCh := make(chan os.Signal, 1)
	signal.Notify(sigCh, os.Interrupt, syscall.SIGTERM)
	srv, err := ctlagent.New(cfg)
	if err != nil {
		signal.Stop(sigCh)
		cfg.Logger.Error("failed to start", "error", err)
		return 1
	}

	select {
	case sig := <-sigCh:
		cfg.Logger.Info("caught signal", "signal", sig.String())
	case err := <-srv.Fatal():
		// Already logged by the server (e.g. the cluster's ACL mode differs).
		signal.Stop(sigCh)
		srv.Shutdown()
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	signal.Stop(sigCh)
	if err := srv.Shutdown(); err != nil {
		cfg.Logger.Error("unclean shutdown", "error", err)
		return 1
	}
	cfg.Logger.Info("shutdown complete")
	return 0
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// devNodeGroupsFlag collects repeated -dev-node-group flags.
type devNodeGroupsFlag []server.DevNodeGroup

func (f *devNodeGroupsFlag) String() string { return fmt.Sprint(len(*f), " groups") }

func (f *devNodeGroupsFlag) Set(v string) error {
	g, err := server.ParseDevNodeGroup(v)
	if err != nil {
		return err
	}
	*f = append(*f, g)
	return nil
}
