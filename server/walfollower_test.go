package server_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
)

// A follower on the wal log store that falls behind the leader's snapshot
// installs the snapshot and then keeps appending: Raft must empty its log
// first (raft-wal holds no gap), which it does only when the store, behind
// the log cache, says it is monotonic.
func TestWALFollowerInstallsSnapshotAndKeepsAppending(t *testing.T) {
	c := newFaultCluster(t, server.LogStoreWAL)
	leader := c.leader()
	for deadline := time.Now().Add(10 * time.Second); leader == nil && time.Now().Before(deadline); leader = c.leader() {
		time.Sleep(20 * time.Millisecond)
	}
	if leader == nil {
		t.Fatal("no leader")
	}
	f := c.follower(rand.New(rand.NewPCG(1, 2)), leader, true)
	restored, snapshots := f.obs.restores.Load(), leader.disk.snapshots.Load()

	// Cut off, the follower misses more than a snapshot's worth of
	// entries, and the leader's log is compacted past its own.
	c.isolate(f)
	for i := range 2 * faultSnapshotThreshold {
		create(t, leader.ts, fmt.Sprintf("behind-%d", i))
	}
	waitFor(t, 20*time.Second, "the leader to take a snapshot", func() string {
		if leader.disk.snapshots.Load() == snapshots {
			return "no snapshot yet"
		}
		return ""
	})
	c.heal()
	waitFor(t, 20*time.Second, f.name+" to install the leader's snapshot", func() string {
		if f.obs.restores.Load() == restored {
			return "no snapshot restored"
		}
		return ""
	})
	// Then it takes the entries after the snapshot.
	for i := range 20 {
		create(t, leader.ts, fmt.Sprintf("after-%d", i))
	}
	waitConverged(t, c.live(), listQ(t, leader.ts, ""))
	if v := c.inv.Violations(); len(v) > 0 {
		t.Errorf("the servers' FSMs broke an invariant: %v", v)
	}
}
