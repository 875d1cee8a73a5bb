package server_test

// The fault suite: the linearizability check of linearizability_test.go on
// persistent servers (bbolt or raft-wal files in t.TempDir()) under a
// nemesis that fails or stalls the disk of the leader or of a follower,
// crashes a server with writes in flight and restarts it on its data
// directory, removes and re-adds a server, and partitions, while Raft takes
// a snapshot and compacts its log every few entries. Beside porcupine, an
// invariant checker hears every server's FSM: no applied index or state
// ever goes back on a server, and no two servers apply different entries at
// one index.
//
// One history runs in `make test`; `make chaos` runs CHAOS_HISTORIES of
// CHAOS_SECONDS each, alternating the boltdb and wal log stores.

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

const (
	// ctlplane's default: a follower cut off for less than this neither
	// campaigns nor is replaced.
	faultRaftTimeout = time.Second
	// A snapshot every 200 entries (a few a second), keeping few
	// behind it: snapshots, compactions and snapshot installs happen in
	// every history, and a follower that lags for a moment may still be
	// past the latest snapshot.
	faultSnapshotThreshold = 200
	faultTrailingLogs      = 16
	faultSnapshotInterval  = 50 * time.Millisecond
	// Small raft-wal segments (a hundred entries): compaction deletes
	// whole segments only, and raft-wal still serves compacted entries of
	// its open segment.
	faultWALSegmentSize = 16 << 10
)

// faultNode is one server slot: its addresses and proxy stay, its process
// (incarnation) comes and goes.
type faultNode struct {
	name           string
	httpAddr, bind string
	proxy          *raftProxy
	expect         int
	join           []string
	dir            string
	disk           *diskFaults
	obs            *fsmObserver
	ts             *servertest.TestServer // nil while down
	id             string                 // Raft ID of the latest incarnation
	starts         int
}

type faultCluster struct {
	t        *testing.T
	inv      *invariants
	logStore string

	mu     sync.Mutex
	nodes  []*faultNode // three voters, then the server that is removed and re-added
	events map[string]int
}

// newFaultCluster forms a cluster of three and adds a fourth server.
func newFaultCluster(t *testing.T, logStore string) *faultCluster {
	t.Helper()
	c := &faultCluster{t: t, inv: newInvariants(), logStore: logStore, events: map[string]int{}}
	addrs := freeAddrs(t, 4)
	for i := range addrs {
		bind := servertest.FreeAddr(t)
		n := &faultNode{name: fmt.Sprintf("node%d", i+1), httpAddr: addrs[i], bind: bind,
			proxy: startRaftProxy(t, bind), expect: 3, join: addrs[:3], dir: t.TempDir()}
		if i == 3 {
			n.expect = 0 // joins the cluster the others formed
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes[:3] {
		c.start(n)
	}
	servertest.WaitForCluster(t, c.live())
	c.start(c.nodes[3])
	servertest.WaitForCluster(t, c.live())
	return c
}

// start starts a new incarnation of n on its data directory.
func (c *faultCluster) start(n *faultNode) {
	c.t.Helper()
	n.starts++
	disk := &diskFaults{}
	obs := c.inv.observer(fmt.Sprintf("%s#%d", n.name, n.starts))
	ts := servertest.StartNoWait(c.t, servertest.HTTPAddr(n.httpAddr), servertest.Join(n.expect, n.join...),
		servertest.RaftTimeout(faultRaftTimeout), servertest.BindAddr(n.bind), servertest.Advertise(n.proxy.Addr()),
		servertest.InsecureRaft(), func(cfg *server.Config) {
			cfg.NodeName = n.name
			cfg.Dev = false
			cfg.DataDir = n.dir
			cfg.RaftLogStore = c.logStore
			cfg.SnapshotThreshold = faultSnapshotThreshold
			cfg.SnapshotInterval = faultSnapshotInterval
			cfg.TrailingLogs = faultTrailingLogs
			cfg.RaftWALSegmentSize = faultWALSegmentSize
			cfg.WrapRaftStores = disk.wrap
			cfg.FSMObserver = obs
		})
	c.mu.Lock()
	n.disk, n.obs, n.ts, n.id = disk, obs, ts, ts.NodeID()
	c.mu.Unlock()
}

// live are the running servers.
func (c *faultCluster) live() []*servertest.TestServer {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*servertest.TestServer
	for _, n := range c.nodes {
		if n.ts != nil {
			out = append(out, n.ts)
		}
	}
	return out
}

// pick is the chaos clients' choice of server: any slot, so that an
// operation may meet a server that is down (and fail).
func (c *faultCluster) pick(rng *rand.Rand) *servertest.TestServer {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if n := c.nodes[rng.IntN(len(c.nodes))]; n.ts != nil {
			return n.ts
		}
	}
}

// leader is the slot of the server that leads now, nil if none does.
func (c *faultCluster) leader() *faultNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.ts != nil && n.ts.CheckRead(false) == nil {
			return n
		}
	}
	return nil
}

// follower is a running server other than not, chosen by rng.
func (c *faultCluster) follower(rng *rand.Rand, not *faultNode, coreOnly bool) *faultNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*faultNode
	for i, n := range c.nodes {
		if n.ts != nil && n != not && (!coreOnly || i < 3) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[rng.IntN(len(out))]
}

// isolate cuts n off from the others, both ways.
func (c *faultCluster) isolate(n *faultNode) {
	n.proxy.Cut()
	for _, o := range c.nodes {
		if o != n {
			o.proxy.Block(n.id)
		}
	}
}

func (c *faultCluster) heal() {
	for _, n := range c.nodes {
		n.proxy.Heal()
	}
}

func (c *faultCluster) did(event string) {
	c.mu.Lock()
	c.events[event]++
	c.mu.Unlock()
}

// crash stops n as a SIGKILL would: at once it is cut off and its disk
// keeps nothing more; then its process is torn down, and a new one starts
// on the same data directory.
func (c *faultCluster) crash(n *faultNode, down time.Duration) {
	c.isolate(n)
	n.disk.freeze()
	c.mu.Lock()
	ts := n.ts
	n.ts = nil
	c.mu.Unlock()
	ts.Shutdown() // its error is the frozen disk's: nothing to check
	time.Sleep(down)
	c.start(n)
	c.heal()
}

// removeAndReAdd removes the fourth server from the cluster and stops it,
// then adds it back as a new server on the same addresses (it joins, is
// caught up by a snapshot, and promoted).
func (c *faultCluster) removeAndReAdd(rng *rand.Rand, away time.Duration) {
	n := c.nodes[3]
	if n.ts == nil {
		return
	}
	via := c.follower(rng, n, true)
	if via == nil {
		return
	}
	r, err := tryCall(&http.Client{Timeout: 5 * time.Second}, via.ts, http.MethodDelete, "/v1/operator/raft/peer?id="+n.id, "")
	if err != nil || r.Status != http.StatusOK {
		c.did("remove refused") // no leader at that moment
		return
	}
	c.mu.Lock()
	ts := n.ts
	n.ts = nil
	c.mu.Unlock()
	ts.Shutdown()
	c.did("remove " + n.name)
	time.Sleep(away)
	n.dir = c.t.TempDir()
	c.start(n)
	c.did("re-add " + n.name)
}

// Kinds of nemesis step; a history goes through them in a shuffled order,
// the leader's failing append twice as often as the others.
const (
	faultLeaderAppend = iota
	faultLeaderAppend2
	faultDisk
	faultCrash
	faultMembership
	faultPartition
	faultKinds
)

// nemesisStep does one fault, then heals.
func (c *faultCluster) nemesisStep(rng *rand.Rand, kind int) {
	sleep := func(lo, hi int) { time.Sleep(time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond) }
	leader := c.leader()
	for wait := time.Now().Add(3 * time.Second); leader == nil && time.Now().Before(wait); leader = c.leader() {
		time.Sleep(20 * time.Millisecond) // an election after the last fault
	}
	switch kind {
	case faultLeaderAppend, faultLeaderAppend2:
		// A follower is cut off for less than an election timeout, so
		// that the leader replicates to it with a backoff; the leader's
		// next append stalls, then fails, and the follower is reconnected
		// as it fails.
		if leader == nil {
			return
		}
		f := c.follower(rng, leader, false)
		if f == nil {
			return
		}
		c.isolate(f)
		sleep(50, 150)
		healed := make(chan struct{})
		leader.disk.failLogWrite(time.Duration(300+rng.IntN(200))*time.Millisecond, func() {
			c.heal()
			close(healed)
		})
		select {
		case <-healed:
		case <-time.After(2 * time.Second): // no write came
			leader.disk.disarm()
			c.heal()
		}
		c.did("leader append fails, follower backing off")
		sleep(1500, 2500) // an election
	case faultDisk:
		// The disk of the leader or of a follower fails (or stalls) for a while.
		n := leader
		if n == nil || rng.IntN(2) == 0 {
			n = c.follower(rng, leader, false)
		}
		if n == nil {
			return
		}
		if rng.IntN(3) == 0 {
			n.disk.failSnapshotWritesFor(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
			c.did("snapshot writes fail")
		}
		n.disk.failLogWritesFor(time.Duration(200+rng.IntN(600))*time.Millisecond, time.Duration(rng.IntN(100))*time.Millisecond)
		c.did("log writes fail for a while")
		sleep(500, 1500)
	case faultCrash:
		// A crash of the leader or of a follower, with writes in flight.
		n := leader
		what := "crash leader"
		if n == nil || rng.IntN(2) == 0 {
			n, what = c.follower(rng, leader, false), "crash follower"
		}
		if n == nil {
			return
		}
		c.crash(n, time.Duration(100+rng.IntN(700))*time.Millisecond)
		c.did(what)
		sleep(1000, 2000)
	case faultMembership:
		c.removeAndReAdd(rng, time.Duration(200+rng.IntN(800))*time.Millisecond)
		sleep(500, 1500)
	case faultPartition:
		n := leader
		if n == nil || rng.IntN(2) == 0 {
			n = c.follower(rng, leader, false)
		}
		if n == nil {
			return
		}
		c.isolate(n)
		sleep(300, 1500)
		c.heal()
		c.did("partition")
		sleep(300, 1000)
	}
}

// faultHistory runs clients and the nemesis for d and returns the history.
func faultHistory(t *testing.T, c *faultCluster, seed uint64, d time.Duration) []porcupine.Operation {
	var mu sync.Mutex
	var history []porcupine.Operation
	var keys []string
	var seq atomic.Int64
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		cl := &chaosClient{
			pick: c.pick, http: &http.Client{Timeout: 3 * time.Second},
			rng: rand.New(rand.NewPCG(seed, uint64(i))), readArg: "?consistent",
			mu: &mu, history: &history, keys: &keys, id: i, start: start, seq: &seq,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cl.step()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	order := rng.Perm(faultKinds)
	for i, deadline := 0, time.Now().Add(d); time.Now().Before(deadline); i++ {
		c.nemesisStep(rng, order[i%len(order)])
	}
	c.heal()
	close(stop)
	wg.Wait()
	return history
}

func TestLinearizabilityUnderFaults(t *testing.T) {
	histories, seconds := 1, 10
	if v, err := strconv.Atoi(os.Getenv("CHAOS_HISTORIES")); err == nil && v > 0 {
		histories = v
	}
	if v, err := strconv.Atoi(os.Getenv("CHAOS_SECONDS")); err == nil && v > 0 {
		seconds = max(v, 10)
	}
	anomalies, broken, inconclusive, ops := 0, 0, 0, 0
	events := map[string]int{}
	var applied, restores int64
	for h := 0; h < histories; h++ {
		logStore := []string{server.LogStoreBoltDB, server.LogStoreWAL}[h%2]
		t.Run(fmt.Sprintf("history-%d-%s", h, logStore), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano()) + uint64(h)
			c := newFaultCluster(t, logStore)
			history := faultHistory(t, c, seed, time.Duration(seconds)*time.Second)
			ops += len(history)
			for k, v := range c.events {
				events[k] += v
			}
			applied += c.inv.applied.Load()
			restores += c.inv.restores.Load()
			writes := 0
			for _, op := range history {
				if op.Input.(ruleOp).Kind != "read" && !op.Output.(ruleResult).Unknown {
					writes++
				}
			}
			if writes == 0 {
				t.Errorf("history %d (seed %d) has no acknowledged write: the cluster never served", h, seed)
			}
			if v := c.inv.Violations(); len(v) > 0 {
				broken++
				t.Errorf("history %d (seed %d, %s): the servers' FSMs broke an invariant:\n  %s", h, seed, logStore, strings.Join(v, "\n  "))
			}
			switch res := checkHistory(t, fmt.Sprintf("faults-%d", seed), history); res {
			case porcupine.Illegal:
				anomalies++
				t.Errorf("history %d (seed %d, %s, %d ops): not linearizable", h, seed, logStore, len(history))
			case porcupine.Unknown:
				inconclusive++
				t.Logf("history %d (seed %d, %d ops): the checker timed out", h, seed, len(history))
			}
			// Healed, every running server comes to the leader's state.
			waitConverged(t, c.live(), listQ(t, servertest.Leader(t, c.live()), ""))
			t.Logf("history %d (%s): %d ops, %d acknowledged writes, nemesis %v, %d entries applied and %d snapshots restored on all servers",
				h, logStore, len(history), writes, c.events, c.inv.applied.Load(), c.inv.restores.Load())
		})
	}
	summary := fmt.Sprintf("faults: %d histories, %d operations, %d not linearizable, %d broke an FSM invariant, %d inconclusive; %d entries applied, %d snapshots restored; nemesis %v",
		histories, ops, anomalies, broken, inconclusive, applied, restores, events)
	t.Log(summary)
	if histories > 1 {
		fmt.Println("chaos: " + summary)
	}
}
