// Command loadgen measures a ctlplane server over real HTTP: binding-rule
// create and read throughput and latency, how fast a blocked query wakes
// after a write, how long a write takes to wake many blocked queries, and
// the fsync latency of the disk the data lives on.
//
//	go run ./scripts/loadgen -spawn                 # build and start a persistent node, measure, stop it
//	go run ./scripts/loadgen -addr=http://127.0.0.1:8500 -token=SECRET -scenarios=create,read
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

var allScenarios = []string{"fsync", "create", "read", "wake", "fanout"}

type config struct {
	addr          string
	serverPid     int
	fanoutProfile string
	token         string
	spawn         bool
	scenarios     map[string]bool
	clients       []int
	readClients   int
	duration      time.Duration
	watchers      int
	settle        time.Duration
	wakeReps      int
	fsyncCount    int
	fsyncDir      string
	agentArgs     []string
	rounds        int
	etcd          int
	etcdAddrs     []string
	etcdPeerTLS   bool
	name          string    // of the main target in the side-by-side table
	templates     []string  // create: the BindName loads, the headline first
	summary       string    // -summary file
	label         string    // -label
	variants      []variant // -variant
	consul        string    // -consul: the Consul binary measured beside
	consulServers int       // -consul-servers
	raftTLS       bool      // -raft-tls: the -addr cluster's Raft is over TLS
}

// consulSystem names the -consul reference among the measured systems.
const consulSystem = "consul"

// variant is another spawned server, with extra agent flags, whose creates
// are measured next to the main one's.
type variant struct {
	name string
	rev  string // git revision to build ("": the working tree's code)
	args []string
}

// variantList is the repeatable -variant NAME=FLAGS flag.
type variantList []variant

func (l *variantList) String() string { return fmt.Sprint(*l) }
func (l *variantList) Set(v string) error {
	name, args, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME[@REV]=FLAGS, e.g. wal=-raft-log-store=wal or before@main=")
	}
	name, rev, _ := strings.Cut(name, "@")
	*l = append(*l, variant{name: name, rev: rev, args: strings.Fields(args)})
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	var scenarios, clients string
	flag.StringVar(&cfg.addr, "addr", "http://127.0.0.1:8500", "server to measure (ignored with -spawn)")
	flag.StringVar(&cfg.token, "token", os.Getenv("CTLPLANE_TOKEN"), "ACL token with acl:write, e.g. a management token (env CTLPLANE_TOKEN; ignored with -spawn)")
	flag.BoolVar(&cfg.spawn, "spawn", false, "build ctlplane, start a persistent single node in a temporary directory, measure it, then stop it and delete the directory")
	flag.StringVar(&scenarios, "scenarios", strings.Join(allScenarios, ","), "scenarios to run, comma-separated: "+strings.Join(allScenarios, ","))
	flag.StringVar(&clients, "clients", "1,16,64", "create: concurrency levels, comma-separated")
	flag.IntVar(&cfg.readClients, "read-clients", 64, "read: concurrency")
	flag.DurationVar(&cfg.duration, "duration", 5*time.Second, "create, read: time per concurrency level")
	flag.IntVar(&cfg.watchers, "watchers", 10000, "fanout: concurrent blocked queries")
	flag.DurationVar(&cfg.settle, "settle", 2*time.Second, "fanout: pause after every watcher's request is sent, so the server parks them all")
	flag.IntVar(&cfg.wakeReps, "wake-reps", 20, "wake: repetitions")
	flag.IntVar(&cfg.fsyncCount, "fsync-count", 1000, "fsync: 4 KiB write+fsync operations")
	agentArgs := flag.String("agent-args", "", "with -spawn: extra agent flags, space-separated (e.g. -acl-enabled=false)")
	flag.StringVar(&cfg.fsyncDir, "fsync-dir", os.TempDir(), "fsync: directory to measure (with -spawn: the node's data directory)")
	flag.IntVar(&cfg.rounds, "rounds", 1, "create, read: repeat every level this many times (interleaved with the other servers' and etcd's)")
	flag.IntVar(&cfg.etcd, "etcd", 0, "create: start an etcd of this many members ("+benchutil.EtcdBin+", package etcd-server) and measure its puts right after each ctlplane level (0: none)")
	flag.BoolVar(&cfg.etcdPeerTLS, "etcd-peer-tls", false, "with -etcd=N: the members replicate over mutual TLS (--peer-client-cert-auth), as a ctlplane cluster's Raft does (default: peers without TLS)")
	etcdAddrs := flag.String("etcd-endpoints", "", "create: compare with the running etcd at these client addresses (host:port, the leader first) instead of starting one")
	flag.StringVar(&cfg.fanoutProfile, "fanout-profile", "", "fanout: also take the server's CPU profile (needs agent -enable-debug) over the second from the update on, into this file (one per round: FILE.N)")
	flag.IntVar(&cfg.serverPid, "server-pid", 0, "fanout, read: pid of the -addr server, to report the CPU it and the load generator used during the measurement (known with -spawn)")
	flag.StringVar(&cfg.name, "name", "ctlplane", "create: name of the measured server in the side-by-side table")
	flag.Var((*variantList)(&cfg.variants), "variant", "with -spawn, create: also spawn a server with these extra agent flags (and, with @REV, built from that git revision) and measure its creates right after the main one's, as NAME[@REV]=FLAGS (space-separated); repeatable")
	templates := flag.String("templates", "distinct,repeated", "create: BindName loads, comma-separated, the headline first: distinct (svc<N>-${value.name}, every rule its own) and/or repeated (every rule svc-${value.name})")
	flag.StringVar(&cfg.summary, "summary", "", "append the create, etcd, read and fanout measurements to this file, tab-separated, for scripts/benchsummary")
	flag.StringVar(&cfg.label, "label", "loadgen", "with -summary: the label of this run's lines")
	flag.StringVar(&cfg.consul, "consul", "", "create, read: also start this Consul binary (1.16: one persistent server, ACLs on) and measure the same loads on it right after ctlplane's, as the upstream reference (make bench passes $CONSUL_BIN; README says how to build it)")
	flag.IntVar(&cfg.consulServers, "consul-servers", 1, fmt.Sprintf("with -consul: the Consul datacenter's servers (1 to %d), on 127.0.0.1, persistent, Raft among them without TLS (Consul's default); creates go through the leader", benchutil.MaxConsulServers))
	flag.BoolVar(&cfg.raftTLS, "raft-tls", false, "the -addr cluster replicates over TLS: with -consul-servers above 1, the Consul reference (RPC without TLS) is labelled not like for like")
	cpuProfile := flag.String("cpuprofile", "", "write the load generator's own CPU profile to this file (to see how much of the machine the measuring side takes)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", flag.Args())
	}
	if cfg.consulServers < 1 || cfg.consulServers > benchutil.MaxConsulServers {
		return fmt.Errorf("bad -consul-servers value %d (want 1 to %d)", cfg.consulServers, benchutil.MaxConsulServers)
	}
	if cfg.consulServers > 1 && cfg.consul == "" {
		return fmt.Errorf("-consul-servers=%d needs -consul=BIN", cfg.consulServers)
	}
	cfg.agentArgs = strings.Fields(*agentArgs)
	if *etcdAddrs != "" {
		cfg.etcdAddrs = strings.Split(*etcdAddrs, ",")
	}
	cfg.scenarios = map[string]bool{}
	for _, s := range strings.Split(scenarios, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(allScenarios, s) {
			return fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(allScenarios, ","))
		}
		cfg.scenarios[s] = true
	}
	for _, t := range strings.Split(*templates, ",") {
		if t = strings.TrimSpace(t); t != "distinct" && t != "repeated" {
			return fmt.Errorf("bad -templates value %q (known: distinct, repeated)", t)
		}
		cfg.templates = append(cfg.templates, strings.TrimSpace(t))
	}
	for _, s := range strings.Split(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -clients value %q", s)
		}
		cfg.clients = append(cfg.clients, n)
	}

	// Room for every watcher's connection; a spawned server inherits it.
	fdLimit, err := raiseFDLimit()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: raising the file-descriptor limit:", err)
	}
	if cfg.scenarios["fanout"] && uint64(cfg.watchers)+256 > fdLimit {
		fmt.Fprintf(os.Stderr, "loadgen: warning: %d watchers need more file descriptors than the limit of %d\n", cfg.watchers, fdLimit)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	target := cfg.addr
	var others []system // -variant servers, measured by create only
	var notes []string
	consulDesc := ""
	if cfg.spawn {
		dir, err := os.MkdirTemp("", "ctlplane-loadgen-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "loadgen: building ctlplane")
		bin, err := benchutil.Build(ctx, dir, os.Stderr)
		if err != nil {
			return err
		}
		a, err := spawnAgent(ctx, bin, cfg.agentArgs)
		if err != nil {
			return err
		}
		defer a.stop()
		target, cfg.fsyncDir, cfg.token, cfg.serverPid = a.URL, a.DataDir, a.token, a.Pid()
		for _, v := range cfg.variants {
			vbin := bin
			if v.rev != "" {
				fmt.Fprintf(os.Stderr, "loadgen: building ctlplane at %s\n", v.rev)
				if vbin, err = benchutil.BuildRev(ctx, dir, v.rev, os.Stderr); err != nil {
					return err
				}
			}
			va, err := spawnAgent(ctx, vbin, append(slices.Clone(cfg.agentArgs), v.args...))
			if err != nil {
				return fmt.Errorf("variant %s: %w", v.name, err)
			}
			defer va.stop()
			c := benchutil.NewClient(va.URL, slices.Max(cfg.clients)+16)
			c.Token = va.token
			others = append(others, system{name: v.name, c: c, pid: va.Pid()})
			notes = append(notes, fmt.Sprintf("# variant:    %s: %s %s (%s)", v.name, map[bool]string{true: "revision " + v.rev, false: "this tree"}[v.rev != ""], strings.Join(v.args, " "), va.URL))
		}
	}

	if cfg.consul != "" {
		dir, err := os.MkdirTemp("", "ctlplane-loadgen-consul-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "loadgen: starting consul (%d server(s) in %s)\n", cfg.consulServers, dir)
		cs, err := benchutil.StartConsul(ctx, cfg.consul, dir, cfg.consulServers)
		if err != nil {
			return fmt.Errorf("consul: %w", err)
		}
		defer cs.Stop()
		c := benchutil.NewClient(cs.URL, slices.Max(cfg.clients)+16)
		c.Token, c.TokenHeader = cs.Token, benchutil.ConsulTokenHeader
		others = append(others, system{name: consulSystem, c: c, pid: cs.Pid()})
		consulDesc = consulLabel(cs.Version, cs.Servers, cfg.raftTLS)
		notes = append(notes, fmt.Sprintf("# reference:  %s (creates to the leader at %s)", consulDesc, cs.URL))
	}

	fmt.Printf("# ctlplane loadgen\n")
	fmt.Printf("# command:    %s %s\n", filepath.Base(os.Args[0]), strings.Join(os.Args[1:], " "))
	fmt.Printf("# go:         %s %s/%s  GOMAXPROCS=%d  NumCPU=%d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Printf("# target:     %s%s\n", target, map[bool]string{true: " (spawned persistent node: raft-boltdb with fsync, ACLs on, management token)"}[cfg.spawn])
	fmt.Printf("# fd limit:   %d\n", fdLimit)
	for _, n := range notes {
		fmt.Println(n)
	}
	fmt.Printf("# started:    %s\n\n", time.Now().Format(time.RFC3339))

	b := &bench{cfg: cfg, c: benchutil.NewClient(target, cfg.watchers+256), ids: map[string][]string{}, consulDesc: consulDesc}
	b.c.Token = cfg.token
	b.systems = append([]system{{name: cfg.name, c: b.c, pid: cfg.serverPid}}, others...)
	if cfg.scenarios["create"] && (cfg.etcd > 0 || len(cfg.etcdAddrs) > 0) {
		if b.etcd, err = startEtcdRef(ctx, cfg.etcd, cfg.etcdPeerTLS, cfg.etcdAddrs, slices.Max(cfg.clients)); err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
		defer b.etcd.close()
		fmt.Printf("# reference:  etcd %s, %d member(s), %s, puts to the leader at %s\n", b.etcd.version, b.etcd.members, b.etcd.peers(), b.etcd.endpoint)
	}
	if err := b.c.WaitReady(ctx, 30*time.Second, nil); err != nil {
		return err
	}
	steps := map[string]func(context.Context) error{
		"fsync": b.fsync, "create": b.create, "read": b.read, "wake": b.wake, "fanout": b.fanout,
	}
	var runErr error
	for _, name := range allScenarios {
		if !cfg.scenarios[name] {
			continue
		}
		fmt.Fprintf(os.Stderr, "loadgen: running %s\n", name)
		if err := steps[name](ctx); err != nil {
			runErr = fmt.Errorf("%s: %w", name, err)
			break
		}
	}
	b.print(os.Stdout)
	if cfg.summary != "" {
		if err := b.writeSummary(cfg.summary); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}

// consulLabel says what the Consul reference is, for the tables: its
// size and, for more than one server, whether its replication compares
// like for like with the target's (Consul's RPC, Raft included, is without
// TLS unless configured, and it is not configured here).
func consulLabel(version string, servers int, targetRaftTLS bool) string {
	if servers == 1 {
		return version + ", one persistent server, ACLs on, default deny"
	}
	like := "like for like with the target's Raft without TLS"
	if targetRaftTLS {
		like = "NOT like for like: the target's Raft is over TLS"
	}
	return fmt.Sprintf("%s, %d persistent servers, ACLs on, default deny, server RPC (Raft) without TLS, Consul's default: %s",
		version, servers, like)
}

// raiseFDLimit sets the soft RLIMIT_NOFILE to the hard limit. Setting it
// explicitly also makes child processes inherit it.
func raiseFDLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	return rl.Cur, nil
}
