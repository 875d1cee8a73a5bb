// Package client is the node agent: it registers a node with the servers,
// heartbeats, follows the node's allocations with blocking queries and
// runs their tasks with the mock driver, reporting task states, client
// status and deployment health back in batches. It is built to run by the
// thousand in one process (simulated nodes): per client one goroutine
// (the allocation watch) and timers, no polling.
package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// Config configures a client.
type Config struct {
	// Servers are the servers' HTTP base URLs, tried in turn (with backoff
	// and jitter) when one fails.
	Servers []string
	// Token is a token with node:write ("" when ACLs are off): it
	// introduces a new node; the node's later calls present its secret.
	Token string
	// NodeID is the node's ID (a UUID); "" picks a new one.
	NodeID     string
	NodeName   string
	Datacenter string
	Resources  api.Resources
	Meta       map[string]string
	// NodeClass and NodePool are the node's class and pool ("" : default).
	NodeClass string
	NodePool  string
	// The node's dynamic port range (0: Nomad's) and ports never handed out.
	MinDynamicPort int
	MaxDynamicPort int
	ReservedPorts  []int
	// Attributes override or add to the fingerprinted attributes.
	Attributes map[string]string
	Logger     hclog.Logger
	// Now is the clock of task events and health (default time.Now).
	Now func() time.Time
	// Clock, when set, replaces Now and also drives the task timers
	// (tests use a ManualClock).
	Clock Clock
	// HTTPClient sends the requests (default: one shared by every client
	// of the process, with a large connection pool).
	HTTPClient *http.Client
	// FlushInterval batches status reports (default 50ms); a batch of
	// FlushSize reports (default 100) is sent at once.
	FlushInterval time.Duration
	FlushSize     int

	// DataDir holds the node's state (node ID, allocations, task pids) and
	// the allocation directories. Needed by raw_exec; "" keeps everything
	// in memory (simulated nodes).
	DataDir string
	// RawExec enables the raw_exec driver (needs DataDir).
	RawExec bool
	// TokenCheckInterval is how often a followed stream opened with a
	// caller's token asks the servers whether the token still allows it
	// (default DefaultTokenCheckInterval).
	TokenCheckInterval time.Duration
	// TestDrivers offers the test drivers (mock_driver and its alias
	// mock): a dev agent's nodes and tests, never a real client unless
	// asked (agent -client -enable-test-drivers).
	TestDrivers bool
	// KillTasksOnShutdown kills the tasks' processes when Run ends (dev
	// agents); otherwise they keep running and a restarted client with the
	// same DataDir re-attaches to them.
	KillTasksOnShutdown bool
	// LogMaxFiles and LogMaxFileSize bound each task stream's log files
	// (Nomad's defaults: 10 files of 10 MiB).
	LogMaxFiles    int
	LogMaxFileSize int64
	// HTTPAddr, when set, is the address (host:port) the client serves its
	// own API on (task logs); port 0 picks one. The node registers it.
	HTTPAddr string
	// HTTPAdvertise is the address the servers reach that API at (default:
	// the listener's, 127.0.0.1 when it listens on every interface).
	HTTPAdvertise string
	// GCInterval is how often the client asks the servers whether the
	// finished allocations it keeps directories for were collected, and
	// removes those that were (default 1 minute, Nomad's client gc_interval).
	GCInterval time.Duration
}

// Client is one node agent.
type Client struct {
	cfg     Config
	logger  hclog.Logger
	clock   Clock
	servers []*api.Client
	nodeID  string
	// secret is the node's secret (identity.go); guarded by mu.
	secret string
	// httpAddr is the address of the client's own API ("" when none).
	httpAddr string
	// httpPort is the port the client's own API listens on (0: none).
	httpPort int

	ctx context.Context

	mu       sync.Mutex
	closed   bool
	cur      int          // index of the server in use
	failures atomic.Int32 // consecutive failures, for the backoff
	// partitioned: cut off from the servers (SetPartitioned).
	partitioned atomic.Bool
	ttl         time.Duration
	hbTimer     *time.Timer
	runners     map[string]*allocRunner
	// listed: the allocations the servers list for this node, as the
	// changes read so far tell (reconcile).
	listed map[string]bool
	// fullReads counts the reads that answered the whole list.
	fullReads int
	// pending status reports by allocation, sent by flush; pendingLive
	// are those of allocations starting or running, sent first: a new
	// allocation's start does not wait behind a purge's thousands of ends.
	pending     map[string]*api.AllocClientUpdate
	pendingLive map[string]bool
	flushTimer  *time.Timer
	flushing    bool
	// registered is closed once the first registration succeeded.
	registered chan struct{}
	// procs tracks the goroutines that wait for task processes.
	procs sync.WaitGroup
	// saved is the state of a previous run, restored by Run.
	saved *savedState
	// gcDirs are allocations with a directory and no runner (finished,
	// no longer listed): removed once the servers no longer know them.
	gcDirs map[string]bool
	// The state DB (persist.go, statedb.go), open while Run runs; dirty
	// are the allocations whose records are to be written (nil: deleted),
	// persistKick wakes the writer, persistMu orders its rounds.
	db          *stateDB
	dirty       map[string]*allocRunner
	persistKick chan struct{}
	persistMu   sync.Mutex
}

var (
	sharedOnce sync.Once
	sharedHTTP *http.Client
)

// sharedHTTPClient is the default HTTP client of every Client in the
// process: one pool, big enough for a connection per simulated node.
func sharedHTTPClient() *http.Client {
	sharedOnce.Do(func() {
		tr := &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        0,
			MaxIdleConnsPerHost: 4096,
			IdleConnTimeout:     90 * time.Second,
		}
		sharedHTTP = &http.Client{Transport: tr}
	})
	return sharedHTTP
}

// New returns a client; Run starts it.
func New(cfg Config) (*Client, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("client: at least one server address is needed")
	}
	var saved *savedState
	var secret string
	if cfg.DataDir != "" {
		if err := prepareDataDir(cfg.DataDir); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		var err error
		if saved, err = loadState(cfg.DataDir); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		if saved != nil && cfg.NodeID == "" {
			cfg.NodeID = saved.NodeID
		}
		if secret, err = loadSecret(cfg.DataDir); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	if cfg.NodeID == "" {
		cfg.NodeID = uuid.NewString()
	}
	if _, err := uuid.Parse(cfg.NodeID); err != nil || len(cfg.NodeID) != 36 {
		return nil, fmt.Errorf("client: node ID %q is not a 36-character UUID", cfg.NodeID)
	}
	if cfg.NodeName == "" {
		cfg.NodeName = "node-" + cfg.NodeID[:8]
	}
	if cfg.Datacenter == "" {
		cfg.Datacenter = "dc1"
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = sharedHTTPClient()
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 50 * time.Millisecond
	}
	if cfg.FlushSize <= 0 {
		cfg.FlushSize = 100
	}
	if cfg.GCInterval <= 0 {
		cfg.GCInterval = time.Minute
	}
	if cfg.RawExec && cfg.DataDir == "" {
		return nil, errors.New("client: raw_exec needs a data directory")
	}
	if cfg.LogMaxFiles <= 0 {
		cfg.LogMaxFiles = 10
	}
	if cfg.LogMaxFileSize <= 0 {
		cfg.LogMaxFileSize = 10 << 20
	}
	clock := cfg.Clock
	if clock == nil {
		clock = realClock{now: cfg.Now}
	}
	c := &Client{
		cfg: cfg, logger: cfg.Logger.Named("client").With("node", cfg.NodeName), clock: clock, nodeID: cfg.NodeID, secret: secret,
		runners: map[string]*allocRunner{}, pending: map[string]*api.AllocClientUpdate{}, pendingLive: map[string]bool{},
		registered: make(chan struct{}), ctx: context.Background(), saved: saved, gcDirs: map[string]bool{},
		dirty: map[string]*allocRunner{}, persistKick: make(chan struct{}, 1),
	}
	for _, addr := range cfg.Servers {
		// msgpack on the busiest calls (reports, allocation changes), as Nomad's clients.
		ac, err := api.NewClient(api.Config{Address: addr, Token: cfg.Token, HTTPClient: cfg.HTTPClient, Msgpack: true})
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		c.servers = append(c.servers, ac)
	}
	return c, nil
}

// NodeID is the node's ID.
func (c *Client) NodeID() string { return c.nodeID }

// Registered is closed once the node is registered.
func (c *Client) Registered() <-chan struct{} { return c.registered }

// Run registers the node and runs it until ctx ends. Task timers stop
// with it (simulated tasks end with their client).
func (c *Client) Run(ctx context.Context) error {
	var persisted chan struct{}
	if c.cfg.DataDir != "" {
		db, err := openStateDB(c.cfg.DataDir)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		if err := db.putNodeID(c.nodeID); err != nil {
			db.close()
			return fmt.Errorf("client: saving the node ID: %w", err)
		}
		c.db = db
		persisted = make(chan struct{})
		go c.persistLoop(ctx, persisted)
	}
	c.mu.Lock()
	c.ctx = ctx
	if c.saved != nil {
		c.restoreLocked(c.saved)
		c.saved = nil
	}
	c.mu.Unlock()
	defer c.shutdown(persisted)
	if c.cfg.HTTPAddr != "" {
		stop, err := c.serveHTTP()
		if err != nil {
			return err
		}
		defer stop()
	}
	if c.cfg.RawExec {
		go c.rotateLoop(ctx)
	}
	if c.cfg.DataDir != "" {
		c.findOrphanDirs()
		go c.gcLoop(ctx)
	}
	if err := c.register(ctx); err != nil {
		return err
	}
	close(c.registered)
	// index is the last read's: the next one waits for the servers to move
	// it and asks for the changes after it (0: the whole list, at once).
	var index uint64
	for ctx.Err() == nil {
		srv := c.server()
		changes, meta, err := c.asNode(srv).NodeAllocationChanges(ctx, c.nodeID, index, &api.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Minute})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if api.IsNotFound(err) {
				// The servers forgot the node (e.g. a restored snapshot).
				if err := c.register(ctx); err != nil {
					return err
				}
				index = 0
				continue
			}
			c.failed(srv, err)
			if !c.sleep(ctx, c.backoff()) {
				break
			}
			continue
		}
		c.succeeded()
		index = meta.LastIndex
		if !c.reconcile(changes) {
			index = 0 // this node's list is not the servers': read it all
		}
	}
	return nil
}

// shutdown stops the runners and, once the writer (persistLoop: persisted
// closes when it ends) is done, saves what is left and closes the state DB.
func (c *Client) shutdown(persisted <-chan struct{}) {
	c.mu.Lock()
	c.closed = true
	if c.hbTimer != nil {
		c.hbTimer.Stop()
	}
	if c.flushTimer != nil {
		c.flushTimer.Stop()
	}
	for _, ar := range c.runners {
		ar.destroy()
	}
	c.mu.Unlock()
	if persisted != nil {
		<-persisted
		// What is still queued is saved: unless killed, the tasks keep
		// running and a restarted client re-attaches to them.
		c.closeState()
	}
	if c.cfg.KillTasksOnShutdown {
		c.procs.Wait()
	}
}

// reconcile starts, updates, stops and drops runners after a read of the
// changes in the node's list of allocations. It says false when the list
// this node now holds is not as long as the servers' (the next read must
// be whole).
func (c *Client) reconcile(changes *api.ClientAllocChanges) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return true
	}
	if changes.Full {
		c.fullReads++
	}
	if changes.Full || c.listed == nil {
		c.listed = make(map[string]bool, len(changes.Allocs))
	}
	for i, ca := range changes.Allocs {
		if c.stopping(i) {
			return true
		}
		a := ca.Allocation
		if a == nil {
			continue
		}
		c.listed[a.ID] = true
		if ar := c.runners[a.ID]; ar != nil {
			if a.DesiredStatus != ar.alloc.DesiredStatus || a.AllocModifyIndex > ar.alloc.AllocModifyIndex {
				ar.update(a, ca.TaskGroup)
			}
			continue
		}
		if a.ClientTerminalStatus() {
			continue
		}
		if a.TerminalStatus() {
			// Told to stop before it ever ran here: report it ended.
			c.queueUpdate(&api.AllocClientUpdate{ID: a.ID, ClientStatus: api.AllocClientStatusComplete,
				ClientDescription: "Allocation stopped before it started", TaskStates: a.TaskStates})
			continue
		}
		if ca.TaskGroup == nil {
			c.queueUpdate(&api.AllocClientUpdate{ID: a.ID, ClientStatus: api.AllocClientStatusFailed,
				ClientDescription: fmt.Sprintf("task group %q of job %q version %d not found", a.TaskGroup, a.JobID, a.JobVersion)})
			continue
		}
		ar := newAllocRunner(c, a, ca.TaskGroup)
		c.runners[a.ID] = ar
		ar.run()
	}
	// The servers no longer list what ended (or was deleted): stop what
	// still runs of it, and forget it once every task is dead.
	unlist := func(ar *allocRunner) {
		ar.unlisted = true
		ar.stop()
		if ar.finished() {
			c.forgetLocked(ar)
		}
	}
	if changes.Full {
		for id, ar := range c.runners {
			if !c.listed[id] {
				unlist(ar)
			}
		}
	}
	for i, id := range changes.Removed {
		if c.stopping(i) {
			return true
		}
		delete(c.listed, id)
		if ar := c.runners[id]; ar != nil {
			unlist(ar)
		}
	}
	return len(c.listed) == changes.Count
}

// stopping says, every 256th step of a long loop under c.mu, whether the
// client is shutting down: a read of thousands of changes gives way to it.
func (c *Client) stopping(step int) bool {
	return step%256 == 255 && c.ctx.Err() != nil
}

// queueUpdate adds a report to the next batch (a newer report of the same
// allocation replaces an older one). Called with c.mu held.
func (c *Client) queueUpdate(u *api.AllocClientUpdate) {
	if c.closed {
		return
	}
	c.pendLocked(u)
	if c.flushing {
		return
	}
	if len(c.pending) >= c.cfg.FlushSize {
		if c.flushTimer != nil {
			c.flushTimer.Stop()
		}
		c.flushTimer = time.AfterFunc(0, c.flush)
		return
	}
	if c.flushTimer == nil {
		c.flushTimer = time.AfterFunc(c.cfg.FlushInterval, c.flush)
	}
}

// pendLocked keeps a report for the next batch. Called with c.mu held.
func (c *Client) pendLocked(u *api.AllocClientUpdate) {
	c.pending[u.ID] = u
	if u.ClientStatus == api.AllocClientStatusPending || u.ClientStatus == api.AllocClientStatusRunning {
		c.pendingLive[u.ID] = true
	} else {
		delete(c.pendingLive, u.ID)
	}
}

// flush sends the pending reports in one request (at most
// api's per-request cap); on failure they are kept for the next try,
// unless a newer report replaced them meanwhile.
func (c *Client) flush() {
	c.mu.Lock()
	c.flushTimer = nil
	if c.closed || c.flushing || len(c.pending) == 0 || c.partitioned.Load() {
		c.mu.Unlock()
		return
	}
	batch := make([]*api.AllocClientUpdate, 0, min(len(c.pending), maxUpdatesPerRequest))
	take := func(id string) {
		batch = append(batch, c.pending[id])
		delete(c.pending, id)
		delete(c.pendingLive, id)
	}
	for id := range c.pendingLive {
		if len(batch) == maxUpdatesPerRequest {
			break
		}
		take(id)
	}
	for id := range c.pending {
		if len(batch) == maxUpdatesPerRequest {
			break
		}
		take(id)
	}
	c.flushing = true
	ctx := c.ctx
	c.mu.Unlock()
	// What the servers are told is saved first.
	ids := make([]string, len(batch))
	for i, u := range batch {
		ids[i] = u.ID
	}
	c.persistRecords(ctx, ids)

	srv := c.server()
	_, err := c.asNode(srv).UpdateAllocations(ctx, c.nodeID, batch)
	var apiErr *api.Error
	refused := errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusBadRequest || apiErr.StatusCode == http.StatusRequestEntityTooLarge ||
		apiErr.StatusCode == http.StatusForbidden || apiErr.StatusCode == http.StatusConflict)
	if err != nil && !refused {
		c.failed(srv, err)
	} else if err == nil {
		c.succeeded()
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushing = false
	if refused {
		// A report the servers refuse will never be accepted.
		c.logger.Error("the servers refused a status report", "error", err)
	} else if err != nil {
		for _, u := range batch {
			if _, newer := c.pending[u.ID]; !newer {
				c.pendLocked(u)
			}
		}
	}
	if c.closed || len(c.pending) == 0 || c.flushTimer != nil {
		return
	}
	wait := c.cfg.FlushInterval
	switch {
	case err != nil && !refused:
		wait = c.backoff()
	case len(c.pending) >= c.cfg.FlushSize:
		wait = 0
	}
	c.flushTimer = time.AfterFunc(wait, c.flush)
}

// maxUpdatesPerRequest keeps one report batch well under the servers'
// caps (1,000 updates, a 1 MiB body: a report with full task states is a
// few KiB).
const maxUpdatesPerRequest = 250
