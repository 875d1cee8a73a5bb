// Package server owns Raft: it opens the log, stable and snapshot stores,
// runs the FSM, turns requests into log entries, and serves the HTTP handler
// it is given. Cluster plumbing lives here, out of sight of the handlers.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	metrics "github.com/armon/go-metrics"
	"github.com/ctlplane/ctlplane/api/webguard"
	"github.com/ctlplane/ctlplane/fsm/raftfsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/server/tlsutil"
	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/stream"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

// ErrNoLeader is returned when there is no leader to serve a request.
var ErrNoLeader error = state.NewError(state.ErrUnavailable, "No cluster leader")

// errAbortedByRestore: a snapshot restore replaced the state while the write
// was being committed, so the write was dropped; the client may retry.
var errAbortedByRestore error = state.NewError(state.ErrUnavailable, "The write was not applied: a snapshot restore replaced the state while it was being committed; retry it")

// applyEnqueueTimeout bounds how long a write waits to enter Raft's queue.
const applyEnqueueTimeout = 30 * time.Second

// Server is one ctlplane agent.
type Server struct {
	config *Config
	logger hclog.Logger
	nodeID string
	// key proves this server's requests to change its own record; keyHash
	// is what its record keeps.
	key, keyHash string
	fatalCh      chan error
	failed       chan struct{} // closed by fail
	failOnce     sync.Once

	fsm *raftfsm.FSM
	// events is the event stream's buffer (nil: off).
	events *stream.Buffer
	raft   *raft.Raft
	// transport is in memory for a lone dev agent, else TCP, over mutual
	// TLS when tls is set.
	transport raft.Transport
	tls       *tlsutil.Bundle
	// logStoreCloser closes the Raft log store (nil in dev mode).
	logStoreCloser io.Closer
	snapshots      raft.SnapshotStore
	// restoreMu serializes snapshot restores (see SnapshotRestore).
	restoreMu sync.Mutex

	// leaderReady is true once this node is leader and has applied every
	// entry committed before its term (a barrier): only then may it answer
	// reads in default or consistent mode.
	leaderReady atomic.Bool

	// hasState: Raft had a log or snapshot at start, so the node is already
	// in a cluster and must not form a new one.
	hasState bool

	// known are the servers heard of while forming a cluster.
	knownMu sync.Mutex
	known   map[string]state.ServerInfo
	// registerCh asks for this server's record to be written now.
	registerCh chan struct{}

	// The leader's HTTP address as last found in the server records (see
	// leaderHTTPAddr).
	lastLeaderMu   sync.Mutex
	lastLeaderID   string
	lastLeaderHTTP string

	// resolver checks the tokens of join requests.
	resolver acl.Resolver

	clusterClient    *http.Client
	forwardTransport *http.Transport

	httpListener  net.Listener
	httpsListener net.Listener // nil without -https-addr
	httpServer    *http.Server
	// queryCtx is the base context of HTTP requests; it is cancelled first on
	// shutdown so that blocked queries answer at once.
	queryCtx    context.Context
	cancelQuery context.CancelFunc

	// inproc serves the API to clients inside this process (dev nodes).
	inproc *memListener
	// apiHeld, when set (HoldAPI), is closed once the HTTP and HTTPS
	// listeners may serve; the in-process listener serves at once.
	apiHeld     chan struct{}
	releaseOnce sync.Once

	// leader is the registry of routines run while this node leads.
	leader leaderRoutines

	shutdownOnce sync.Once
	shutdownCh   chan struct{}
	monitorDone  chan struct{}
}

// New opens the stores and starts Raft. It does not serve HTTP yet: Serve does.
func New(cfg *Config) (*Server, error) {
	cfg.SetDefaults()
	if !cfg.Dev && cfg.DataDir == "" {
		return nil, errors.New("a data directory is required: set -data-dir, or use -dev")
	}
	if cfg.BootstrapExpect < 0 {
		return nil, errors.New("-bootstrap-expect must not be negative")
	}
	if !cfg.Dev && cfg.BootstrapExpect == 0 && len(cfg.Join) == 0 {
		return nil, errors.New("a server needs -bootstrap-expect=N (N servers form a new cluster; 1 for a single server) or -join=ADDR (join an existing one)")
	}
	if cfg.BootstrapExpect > 1 && len(cfg.Join) == 0 {
		return nil, fmt.Errorf("-bootstrap-expect=%d needs -join addresses of the other servers", cfg.BootstrapExpect)
	}
	if err := checkDevAddrs(cfg); err != nil {
		return nil, err
	}
	var bundle *tlsutil.Bundle
	if cfg.TLS.Enabled() {
		b, err := tlsutil.Load(cfg.TLS, cfg.Datacenter)
		if err != nil {
			return nil, err
		}
		bundle = b
	}
	if cfg.HTTPSAddr != "" && bundle == nil {
		return nil, errors.New("-https-addr needs -tls-ca-file, -tls-cert-file and -tls-key-file")
	}
	if (cfg.BootstrapExpect > 1 || len(cfg.Join) > 0) && bundle == nil && !cfg.InsecureRaft {
		return nil, secureDefaultError()
	}
	s := &Server{
		config:      cfg,
		logger:      cfg.Logger,
		fsm:         raftfsm.New(cfg.Logger),
		shutdownCh:  make(chan struct{}),
		monitorDone: make(chan struct{}),
		known:       map[string]state.ServerInfo{},
		registerCh:  make(chan struct{}, 1),
		tls:         bundle,
		fatalCh:     make(chan error, 1),
		failed:      make(chan struct{}),
	}
	s.forwardTransport = &http.Transport{
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	if bundle != nil {
		s.forwardTransport.TLSClientConfig = bundle.ServerClient()
	}
	s.clusterClient = &http.Client{Transport: s.forwardTransport, Timeout: 15 * time.Second}
	if cfg.EventBufferSize >= 0 {
		s.events = stream.NewBuffer(cfg.EventBufferSize)
		s.fsm.SetEventSink(s.events)
	}
	s.queryCtx, s.cancelQuery = context.WithCancel(context.Background())
	if err := s.setupRaft(); err != nil {
		s.closeStores()
		return nil, err
	}
	s.resolver.Datacenter = cfg.Datacenter
	s.resolver.Now = time.Now
	s.AddLeaderRoutine("autopilot", s.autopilot)
	go s.monitorLeadership()
	return s, nil
}

func (s *Server) setupRaft() error {
	cfg := s.config
	id, err := s.loadNodeID()
	if err != nil {
		return err
	}
	s.nodeID = id
	if err := s.checkACLMode(); err != nil {
		return err
	}
	if s.key, err = s.loadServerKey(); err != nil {
		return err
	}
	s.keyHash = keyHash(s.key)

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(id)
	rc.Logger = s.logger.Named("raft")
	rc.HeartbeatTimeout = cfg.RaftTimeout
	rc.ElectionTimeout = cfg.RaftTimeout
	rc.LeaderLeaseTimeout = cfg.RaftTimeout / 2
	rc.CommitTimeout = 5 * time.Millisecond
	// Concurrent writes are batched into one disk sync per batch.
	rc.MaxAppendEntries = 1024
	rc.BatchApplyCh = true
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}

	if err := s.setupTransport(); err != nil {
		return err
	}

	var logs raft.LogStore
	var stable raft.StableStore
	var snaps raft.SnapshotStore
	if cfg.Dev {
		mem := raft.NewInmemStore()
		logs, stable, snaps = mem, mem, newMemSnapshots()
	} else {
		dir := filepath.Join(cfg.DataDir, "raft")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("failed to create %s: %w", dir, err)
		}
		if logs, stable, err = s.openLogStore(dir); err != nil {
			return err
		}
		snaps, err = raft.NewFileSnapshotStoreWithLogger(dir, 2, s.logger.Named("snapshot"))
		if err != nil {
			return fmt.Errorf("failed to open snapshot store in %s: %w", dir, err)
		}
	}

	if cfg.WrapRaftStores != nil {
		w := cfg.WrapRaftStores(RaftStores{Logs: logs, Stable: stable, Snapshots: snaps})
		logs, stable, snaps = w.Logs, w.Stable, w.Snapshots
	}
	s.hasState, err = raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("failed to read Raft state: %w", err)
	}
	// A dev agent bootstraps alone unless it was told to form or join a
	// cluster (in-process test clusters are dev agents with -join).
	devAlone := cfg.Dev && len(cfg.Join) == 0
	if !s.hasState && (devAlone || cfg.BootstrapExpect == 1) {
		conf := raft.Configuration{Servers: []raft.Server{{
			ID: rc.LocalID, Address: s.transport.LocalAddr(), Suffrage: raft.Voter,
		}}}
		if err := raft.BootstrapCluster(rc, logs, stable, snaps, s.transport, conf); err != nil {
			return fmt.Errorf("failed to bootstrap Raft: %w", err)
		}
	}

	s.snapshots = snaps
	var fsm raft.FSM = s.fsm
	if cfg.FSMObserver != nil {
		fsm = &observedFSM{FSM: s.fsm, obs: cfg.FSMObserver}
	}
	s.raft, err = raft.NewRaft(rc, fsm, logs, stable, snaps, s.transport)
	if err != nil {
		return fmt.Errorf("failed to start Raft: %w", err)
	}
	return nil
}

// loadNodeID returns the node's Raft ID: random in dev mode, otherwise
// generated once and kept in the data directory.
func (s *Server) loadNodeID() (string, error) {
	if s.config.Dev {
		return uuid.NewString(), nil
	}
	path := filepath.Join(s.config.DataDir, "node-id")
	if buf, err := os.ReadFile(path); err == nil {
		id := string(buf)
		if _, err := uuid.Parse(id); err != nil {
			return "", fmt.Errorf("node ID in %s is not a UUID: %q", path, id)
		}
		return id, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("failed to read node ID: %w", err)
	}
	if err := os.MkdirAll(s.config.DataDir, 0o700); err != nil {
		return "", fmt.Errorf("failed to create data directory: %w", err)
	}
	id := uuid.NewString()
	if err := os.WriteFile(path, []byte(id), 0o600); err != nil {
		return "", fmt.Errorf("failed to write node ID: %w", err)
	}
	return id, nil
}

// monitorLeadership tracks whether this node may serve leader reads, and
// runs the leader routines while it leads.
func (s *Server) monitorLeadership() {
	defer close(s.monitorDone)
	leaderCh := s.raft.LeaderCh()
	var termStop chan struct{}
	endTerm := func() {
		s.leaderReady.Store(false)
		if termStop != nil {
			close(termStop)
			termStop = nil
		}
		s.stopLeaderRoutines()
	}
	for {
		select {
		case isLeader := <-leaderCh:
			endTerm()
			if !isLeader {
				s.logger.Info("cluster leadership lost")
				continue
			}
			termStop = make(chan struct{})
			if !s.establishLeadership(termStop) {
				continue
			}
			s.leaderReady.Store(true)
			metrics.IncrCounter([]string{"leader", "changes"}, 1)
			s.logger.Info("cluster leadership acquired")
			s.startLeaderRoutines()
			select {
			case s.registerCh <- struct{}{}:
			default:
			}
		case <-s.shutdownCh:
			endTerm()
			return
		}
	}
}

// Serve starts serving the API handler on the HTTP address, behind leader
// forwarding and beside the internal cluster endpoints, returns once it
// listens, and starts forming or joining the cluster.
func (s *Server) Serve(handler API) error {
	ln, err := net.Listen("tcp", s.config.HTTPAddr)
	if err != nil {
		return fmt.Errorf("failed to listen on HTTP address %s: %w", s.config.HTTPAddr, err)
	}
	var tlsConf *tls.Config
	if s.tls != nil {
		tlsConf = s.tls.HTTPS()
	}
	limits := newConnLimiter(s.config.HTTPMaxConnsPerClient)
	netLogger := s.logger.Named("http")
	s.httpListener = newAPIListener(ln, tlsConf, false, s.config.Datacenter, limits, netLogger)
	if s.config.HTTPSAddr != "" {
		lns, err := net.Listen("tcp", s.config.HTTPSAddr)
		if err != nil {
			s.httpListener.Close()
			return fmt.Errorf("failed to listen on HTTPS address %s: %w", s.config.HTTPSAddr, err)
		}
		s.httpsListener = newAPIListener(lns, tlsConf, true, s.config.Datacenter, limits, netLogger)
	}
	s.httpServer = &http.Server{
		Handler:           s.bodyDeadline(webguard.Wrap(s.clusterHandler(handler), webguard.LoopbackAddrs(s.listenerAddrs()...))),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return s.queryCtx },
		ErrorLog:          s.logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	s.logger.Info("HTTP API listening", "address", "http://"+ln.Addr().String(), "raft_address", s.transport.LocalAddr(), "node", s.config.NodeName, "node_id", s.nodeID, "tls", s.tls != nil)
	s.inproc = newMemListener()
	listeners := []net.Listener{s.httpListener, s.inproc}
	if s.httpsListener != nil {
		s.logger.Info("HTTPS API listening", "address", "https://"+s.httpsListener.Addr().String())
		listeners = append(listeners, s.httpsListener)
	}
	for _, l := range listeners {
		go func() {
			if held := s.apiHeld; held != nil && l != net.Listener(s.inproc) {
				// Bound (its address is known, callers wait in its
				// backlog) but not answered until released.
				select {
				case <-held:
				case <-s.shutdownCh:
					l.Close()
					return
				}
			}
			if err := s.httpServer.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.logger.Error("HTTP server stopped", "error", err)
			}
		}()
	}
	go s.joinCluster(s.hasState)
	return nil
}

// HoldAPI makes Serve answer on the HTTP and HTTPS listeners only once
// release is called (the in-process listener answers at once): a dev
// agent answers once its nodes are registered, so that the first job run
// after it answers is placed. Call it before Serve.
func (s *Server) HoldAPI() (release func()) {
	s.apiHeld = make(chan struct{})
	held := s.apiHeld
	return func() { s.releaseOnce.Do(func() { close(held) }) }
}

// HTTPAddr is the address the HTTP API listens on (after Serve).
func (s *Server) HTTPAddr() string { return s.httpListener.Addr().String() }

// HTTPSAddr is the address of the HTTPS-only listener, "" without -https-addr.
func (s *Server) HTTPSAddr() string {
	if s.httpsListener == nil {
		return ""
	}
	return s.httpsListener.Addr().String()
}

// TLSEnabled says whether servers talk to each other over mutual TLS.
func (s *Server) TLSEnabled() bool { return s.tls != nil }

// scheme is how servers reach each other's API.
func (s *Server) scheme() string {
	if s.tls != nil {
		return "https"
	}
	return "http"
}

// RaftAddr is this node's Raft address.
func (s *Server) RaftAddr() string { return string(s.transport.LocalAddr()) }

// NodeID is this node's Raft ID.
func (s *Server) NodeID() string { return s.nodeID }

// Shutdown stops taking requests, lets in-flight writes finish, then closes
// Raft and the stores.
func (s *Server) Shutdown() error {
	var err error
	s.shutdownOnce.Do(func() {
		s.logger.Info("shutting down")
		s.cancelQuery()
		if s.httpServer != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if e := s.httpServer.Shutdown(ctx); e != nil {
				err = fmt.Errorf("HTTP shutdown: %w", e)
			}
			cancel()
		}
		close(s.shutdownCh)
		<-s.monitorDone
		s.forwardTransport.CloseIdleConnections()
		if e := s.raft.Shutdown().Error(); e != nil && err == nil {
			err = fmt.Errorf("raft shutdown: %w", e)
		}
		s.closeStores()
	})
	return err
}

func (s *Server) closeStores() {
	if c, ok := s.transport.(io.Closer); ok {
		c.Close()
	}
	if err := s.closeLogStore(); err != nil {
		s.logger.Error("failed to close Raft store", "error", err)
	}
}

// State is the current state store.
func (s *Server) State() *state.Store { return s.fsm.State() }

// EventBuffer is the buffer this server's FSM publishes its events to (nil
// when the event stream is off).
func (s *Server) EventBuffer() *stream.Buffer { return s.events }

// ApplyEntry commits one encoded log entry (see fsm.Apply for the typed
// form) and returns what the FSM returned for it.
func (s *Server) ApplyEntry(buf []byte) (any, error) {
	f := s.raft.Apply(buf, applyEnqueueTimeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return nil, ErrNoLeader
		}
		if errors.Is(err, raft.ErrAbortedByRestore) {
			return nil, errAbortedByRestore
		}
		return nil, fmt.Errorf("failed to apply request: %w", err)
	}
	if err, ok := f.Response().(error); ok {
		return nil, err
	}
	return f.Response(), nil
}

// CheckRead says whether this node may answer a read in default mode
// (consistent=false) or consistent mode: it must be the leader with its
// state caught up, and for consistent mode a quorum must confirm it still is.
func (s *Server) CheckRead(consistent bool) error {
	if !s.leaderReady.Load() {
		return ErrNoLeader
	}
	if consistent {
		if err := s.raft.VerifyLeader().Error(); err != nil {
			return ErrNoLeader
		}
	}
	return nil
}

// Leader is the leader's Raft address, "" when there is none.
func (s *Server) Leader() string {
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}

// KnownLeader says whether this node knows of a leader.
func (s *Server) KnownLeader() bool { return s.Leader() != "" }

// LastContact is how long ago the leader was last heard from; 0 on the leader.
func (s *Server) LastContact() time.Duration {
	if s.raft.State() == raft.Leader {
		return 0
	}
	last := s.raft.LastContact()
	if last.IsZero() {
		return 0
	}
	return time.Since(last)
}

// Peers are the Raft addresses of the cluster's servers.
func (s *Server) Peers() ([]string, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("failed to read Raft configuration: %w", err)
	}
	peers := []string{}
	for _, srv := range f.Configuration().Servers {
		peers = append(peers, string(srv.Address))
	}
	return peers, nil
}

func (s *Server) isRaftLeader() bool { return s.raft.State() == raft.Leader }

// RaftConfiguration is the current Raft configuration and its log index.
func (s *Server) RaftConfiguration() ([]svc.RaftPeer, uint64, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, 0, fmt.Errorf("failed to read Raft configuration: %w", err)
	}
	index := f.Index()
	if index == 0 {
		// raft does not report the configuration's own index here.
		index = s.raft.AppliedIndex()
	}
	var peers []svc.RaftPeer
	for _, srv := range f.Configuration().Servers {
		peers = append(peers, svc.RaftPeer{ID: string(srv.ID), Address: string(srv.Address), Voter: srv.Suffrage == raft.Voter})
	}
	return peers, index, nil
}

// ServerNames maps the IDs of the recorded servers to their node names.
func (s *Server) ServerNames() map[string]string {
	out := map[string]string{}
	if _, servers, err := s.State().Servers(memdb.NewWatchSet()); err == nil {
		for _, srv := range servers {
			out[srv.ID] = srv.Name
		}
	}
	return out
}

// ACLEnabled says whether access control is on.
func (s *Server) ACLEnabled() bool { return s.config.ACLEnabled }

// Datacenter is the cluster's datacenter name.
func (s *Server) Datacenter() string { return s.config.Datacenter }

// IsDev says whether this is an in-memory development agent.
func (s *Server) IsDev() bool { return s.config.Dev }
