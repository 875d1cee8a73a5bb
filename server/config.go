package server

import (
	"os"
	"runtime"
	"time"

	"github.com/ctlplane/ctlplane/server/tlsutil"
	"github.com/ctlplane/ctlplane/state/stream"
	"github.com/hashicorp/go-hclog"
)

// Config is one agent's configuration.
type Config struct {
	// Dev keeps everything in memory and, unless Join is set, bootstraps a
	// one-node cluster at once.
	Dev      bool
	DataDir  string
	NodeName string
	// BindAddr is the Raft address (host:port; port 0 picks a free one).
	BindAddr string
	// AdvertiseAddr is the Raft address other servers use to reach this one
	// (default: the bound address), e.g. behind a proxy or NAT.
	AdvertiseAddr string
	// HTTPAddr is the HTTP API address (host:port; port 0 picks a free one).
	HTTPAddr        string
	BootstrapExpect int
	// Join are HTTP addresses (host:port) of other servers to form or join a cluster with.
	Join []string

	// TLS are the PEM files of mutual TLS between servers (Raft, and joining
	// and forwarding over HTTPS) and of the HTTPS API. With TLS the HTTP
	// address also answers HTTPS.
	TLS tlsutil.Files
	// HTTPSAddr, when set, serves the API over HTTPS only (needs TLS).
	HTTPSAddr string
	// DevListenAny lets a dev agent (ACLs off, raw_exec on) listen on a
	// non-loopback HTTP address; without it that is refused.
	DevListenAny bool
	// InsecureRaft lets an agent form or join a multi-server cluster
	// without TLS: anyone who reaches the Raft port can then take it over.
	InsecureRaft bool
	// HTTPMaxConnsPerClient caps the open connections per client IP (0: no
	// cap); over it a client gets 429.
	HTTPMaxConnsPerClient int
	// HTTPBodyReadTimeout bounds reading a request body.
	HTTPBodyReadTimeout time.Duration
	// DeadNonvoterTimeout is how long a joiner may stay an unreachable
	// non-voter before the leader removes it (default 5 minutes).
	DeadNonvoterTimeout time.Duration

	// RaftTimeout is the heartbeat and election timeout; the leader lease is
	// half of it. Shorter is faster failover, longer is fewer false elections.
	RaftTimeout time.Duration
	// ACLEnabled turns access control on: anything not granted is denied.
	ACLEnabled bool
	// ACLInitialManagementToken, when set, is created as a management token.
	ACLInitialManagementToken string
	// JoinToken is sent when asking a cluster to add this server; with ACLs
	// on (and without TLS) it must be a management token. Defaults to
	// ACLInitialManagementToken.
	JoinToken string
	// Datacenter names this cluster (node identities minted at login carry it).
	Datacenter string
	// TokenReapInterval is how often the leader deletes expired tokens.
	TokenReapInterval time.Duration

	// EnableDebug serves Go's profiler under /debug/pprof/ (management
	// token required when ACLs are on).
	EnableDebug bool

	// RaftLogStore is the persistent Raft log store: LogStoreBoltDB (the
	// default) or LogStoreWAL.
	RaftLogStore string
	// RaftWALSegmentSize is the size of the wal log store's segment files
	// (bytes; 0: raft-wal's 64 MiB).
	RaftWALSegmentSize int
	// RaftBolt tunes the boltdb log store.
	RaftBolt BoltOptions

	// SnapshotThreshold is how many log entries trigger a snapshot.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log (0:
	// Raft's default, 10240); a follower further behind gets a snapshot.
	TrailingLogs uint64

	Logger hclog.Logger

	// SchedulerWorkers is how many evaluations the leader runs at once
	// (default: the number of CPUs).
	SchedulerWorkers int
	// LimitedPlacement places as Nomad's service stack: a placement
	// without affinities or spreads scores ⌈log2 n⌉ fitting nodes of the
	// evaluation's shuffled order (the job's anti-affinity spreads a group
	// over the cluster) instead of every feasible node for the tightest
	// fit. Off by default: spread placements wake every node, whose list
	// reads then bound the placement rate (README, Orchestrator).
	LimitedPlacement bool
	// HeartbeatTTL is how long a client node may stay silent before it is
	// marked down (default 10s).
	HeartbeatTTL time.Duration
	// MaxNodes caps how many client nodes may be registered (default
	// nodes.DefaultMaxNodes, 10,000); a new node over it is refused.
	MaxNodes int
	// DevNodes is how many simulated client nodes (mock_driver) the agent
	// runs in its own process; agent -dev runs one.
	DevNodes int
	// DevMinDynamicPort and DevMaxDynamicPort are the dynamic port range
	// of a dev agent's one client node, the one that runs real processes
	// (raw_exec); 0: Nomad's 20000–32000. Tests give each agent its own,
	// so that its tasks do not meet a running dev agent's.
	DevMinDynamicPort, DevMaxDynamicPort int
	// DevNodeGroups are further simulated nodes with their own
	// datacenter, class, pool, meta and attributes.
	DevNodeGroups []DevNodeGroup
	// GCInterval is how often the leader garbage-collects finished
	// objects; the thresholds are how long each kind must have been
	// finished first (Nomad's gc_interval, eval_gc_threshold,
	// deployment_gc_threshold, job_gc_threshold, node_gc_threshold).
	GCInterval            time.Duration
	EvalGCThreshold       time.Duration
	DeploymentGCThreshold time.Duration
	JobGCThreshold        time.Duration
	NodeGCThreshold       time.Duration

	// MaxJobAllocs caps the allocations one job asks for in all (the sum of
	// its task groups' Count; default jobs.DefaultMaxJobAllocs).
	MaxJobAllocs int

	// GCHeapFloor lets the heap grow at least this many bytes past the live
	// heap before a garbage collection (server/gctuner: heap goal
	// max(live×2, live+floor), never past GOMEMLIMIT). The tuner is
	// process-wide: the agent starts it and stops it at Shutdown. 0 (the
	// default here, so tests keep Go's GOGC): no tuner; the binary's
	// -gc-heap-floor-mb defaults to 512 MiB.
	GCHeapFloor uint64

	// GCWhenIdle collects garbage once the process has been idle for 300 ms
	// with half its heap headroom used (server/gctuner.Idle), so that a
	// burst after a quiet spell does not meet a collection. Process-wide
	// like the tuner; false here (tests), the binary's -gc-when-idle
	// defaults to true.
	GCWhenIdle bool

	// Now is the clock of the domain services (default time.Now); tests
	// pass a fake one.
	Now func() time.Time

	// EventBufferSize is how many entries' events the server keeps for the
	// event stream (0: stream.DefaultBufferSize, 100; below 0: no stream).
	EventBufferSize int
	// EventHeartbeat and EventWriteTimeout: see http.SetEventStream (0: defaults).
	EventHeartbeat    time.Duration
	EventWriteTimeout time.Duration

	// EstablishHook, when set (fault-injection tests), runs before each attempt to
	// establish leadership; an error fails the attempt.
	EstablishHook func() error

	// WrapRaftStores, when set (fault-injection tests), wraps the log,
	// stable and snapshot stores before Raft opens them.
	WrapRaftStores func(RaftStores) RaftStores
	// FSMObserver, when set (fault-injection tests), is told of what the
	// FSM applies and restores (see FSMObserver).
	FSMObserver FSMObserver
}

// DefaultConfig returns the defaults of a persistent agent.
func DefaultConfig() *Config {
	host, _ := os.Hostname()
	return &Config{
		NodeName:          host,
		BindAddr:          "127.0.0.1:8300",
		HTTPAddr:          "127.0.0.1:8500",
		RaftTimeout:       time.Second,
		SnapshotThreshold: 8192,
		SnapshotInterval:  30 * time.Second,
		RaftBolt:          BoltOptions{NoFreelistSync: true, FreelistMap: true},
		ACLEnabled:        true,
		Datacenter:        "dc1",
		TokenReapInterval: 30 * time.Second,

		HTTPMaxConnsPerClient: DefaultHTTPMaxConnsPerClient,
		HTTPBodyReadTimeout:   DefaultHTTPBodyReadTimeout,
		DevNodes:              -1,
		EventBufferSize:       stream.DefaultBufferSize,
	}
}

// SetDefaults fills what was left unset, in this one place: New calls it,
// so the binary, the composition root and the tests get the same defaults.
// Dev agents get theirs (a free Raft port, fast elections, one client node).
func (c *Config) SetDefaults() {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.BindAddr == "" {
		c.BindAddr = "127.0.0.1:8300"
		if c.Dev {
			c.BindAddr = "127.0.0.1:0"
		}
	}
	if c.RaftTimeout <= 0 {
		c.RaftTimeout = time.Second
		if c.Dev {
			c.RaftTimeout = 100 * time.Millisecond
		}
	}
	if c.DevNodes < 0 {
		c.DevNodes = 0
		if c.Dev {
			c.DevNodes = 1
		}
	}
	if c.TokenReapInterval <= 0 {
		c.TokenReapInterval = 30 * time.Second
	}
	if c.Datacenter == "" {
		c.Datacenter = "dc1"
	}
	if c.JoinToken == "" {
		c.JoinToken = c.ACLInitialManagementToken
	}
	if c.DeadNonvoterTimeout <= 0 {
		c.DeadNonvoterTimeout = 5 * time.Minute
	}
	if c.HTTPBodyReadTimeout <= 0 {
		c.HTTPBodyReadTimeout = DefaultHTTPBodyReadTimeout
	}
	if c.HeartbeatTTL <= 0 {
		c.HeartbeatTTL = 10 * time.Second
	}
	if c.GCInterval <= 0 {
		c.GCInterval = 5 * time.Minute
	}
	if c.EvalGCThreshold <= 0 {
		c.EvalGCThreshold = time.Hour
	}
	if c.DeploymentGCThreshold <= 0 {
		c.DeploymentGCThreshold = time.Hour
	}
	if c.JobGCThreshold <= 0 {
		c.JobGCThreshold = 4 * time.Hour
	}
	if c.NodeGCThreshold <= 0 {
		c.NodeGCThreshold = 24 * time.Hour
	}
	if c.SchedulerWorkers <= 0 {
		c.SchedulerWorkers = runtime.NumCPU()
	}
}
