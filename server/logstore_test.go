package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/agent"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// Each log store keeps the state across a restart, with the log replayed
// (no snapshot is taken at this size), and a data directory is refused to
// the other store.
func TestLogStoresKeepStateAcrossRestart(t *testing.T) {
	for _, tc := range []struct {
		store string
		bolt  server.BoltOptions
		other string
	}{
		{server.LogStoreBoltDB, server.BoltOptions{}, server.LogStoreWAL},
		{server.LogStoreBoltDB, server.BoltOptions{NoFreelistSync: true, FreelistMap: true, InitialMmapSize: 64 << 20}, server.LogStoreWAL},
		{server.LogStoreWAL, server.BoltOptions{}, server.LogStoreBoltDB},
	} {
		t.Run(tc.store, func(t *testing.T) {
			dir, bind := t.TempDir(), servertest.FreeAddr(t)
			opts := []servertest.Option{servertest.Persistent(dir), servertest.BindAddr(bind), func(c *server.Config) {
				c.RaftLogStore, c.RaftBolt = tc.store, tc.bolt
			}}
			ts := servertest.Start(t, opts...)
			var made []rule
			for _, name := range []string{"a", "b", "c"} {
				made = append(made, create(t, ts, name))
			}
			before := listQ(t, ts, "")
			if err := ts.Shutdown(); err != nil {
				t.Fatal(err)
			}

			ts = servertest.Start(t, opts...)
			if after := listQ(t, ts, ""); after.Body != before.Body || after.Index != before.Index {
				t.Fatalf("after a restart: %v, before: %v", after, before)
			}
			if r := create(t, ts, "d"); r.CreateIndex <= made[2].CreateIndex {
				t.Fatalf("a write after the restart got index %d, not past %d", r.CreateIndex, made[2].CreateIndex)
			}
			if err := ts.Shutdown(); err != nil {
				t.Fatal(err)
			}

			cfg := server.DefaultConfig()
			cfg.DataDir, cfg.BootstrapExpect, cfg.BindAddr, cfg.HTTPAddr = dir, 1, "127.0.0.1:0", "127.0.0.1:0"
			cfg.ACLEnabled, cfg.RaftLogStore = false, tc.other
			_, err := agent.New(cfg)
			if err == nil || !strings.Contains(err.Error(), "-raft-log-store="+tc.other+", but ") ||
				!strings.Contains(err.Error(), "start with -raft-log-store="+tc.store) {
				t.Fatalf("start with the other log store: %v", err)
			}
		})
	}
}

// A boltdb file written with bbolt's own freelist settings (an array
// freelist written on every commit: what a server before the current
// defaults wrote) opens with the defaults (a hashmap freelist rebuilt by a
// scan), and the file those write opens with bbolt's settings again: the
// state and the log are whole each time, and writes go on after each switch.
func TestBoltFreelistSettingsReadEachOther(t *testing.T) {
	if d := server.DefaultConfig().RaftBolt; !d.NoFreelistSync || !d.FreelistMap {
		t.Fatalf("default bbolt options %+v: want NoFreelistSync and FreelistMap on", d)
	}
	dir, bind := t.TempDir(), servertest.FreeAddr(t)
	var made []rule
	var before listing
	for i, bolt := range []server.BoltOptions{{}, server.DefaultConfig().RaftBolt, {}} {
		ts := servertest.Start(t, servertest.Persistent(dir), servertest.BindAddr(bind), func(c *server.Config) { c.RaftBolt = bolt })
		if i > 0 {
			if after := listQ(t, ts, ""); after.Body != before.Body || after.Index != before.Index {
				t.Fatalf("start %d with %+v: %v, before: %v", i, bolt, after, before)
			}
		}
		for _, name := range []string{"a", "b", "c"} {
			r := create(t, ts, fmt.Sprintf("%s%d", name, i))
			if len(made) > 0 && r.CreateIndex <= made[len(made)-1].CreateIndex {
				t.Fatalf("start %d: a write got index %d, not past %d", i, r.CreateIndex, made[len(made)-1].CreateIndex)
			}
			made = append(made, r)
		}
		before = listQ(t, ts, "")
		if n := strings.Count(before.Body, `"BindName"`); n != len(made) {
			t.Fatalf("start %d: %d rules listed, want %d: %s", i, n, len(made), before.Body)
		}
		if err := ts.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUnknownLogStoreRefused(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.DataDir, cfg.BootstrapExpect, cfg.BindAddr, cfg.HTTPAddr = t.TempDir(), 1, "127.0.0.1:0", "127.0.0.1:0"
	cfg.RaftLogStore = "leveldb"
	if _, err := agent.New(cfg); err == nil || err.Error() != `unknown -raft-log-store "leveldb": use boltdb or wal` {
		t.Fatalf("start with -raft-log-store=leveldb: %v", err)
	}
}
