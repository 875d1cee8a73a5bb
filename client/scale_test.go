package client_test

import (
	"context"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/hashicorp/go-hclog"
)

// TestScaleManyClients runs SCALE_N simulated nodes against one server for
// 12s (past one heartbeat TTL): every node must register and stay ready.
// Opt-in (SCALE_N=1000 go test ./client -run Scale -v): it takes real time.
func TestScaleManyClients(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SCALE_N"))
	if n == 0 {
		t.Skip("SCALE_N not set")
	}
	ts := servertest.Start(t)
	deps := svc.Deps{State: ts.Server.State, Raft: ts.Server, Now: time.Now, Logger: hclog.NewNullLogger()}
	s := nodes.New(deps, nodes.Config{HeartbeatTTL: 10 * time.Second})
	hctx, hcancel := context.WithCancel(context.Background())
	defer hcancel()
	go s.RunHeartbeats(hctx)
	hs := httptest.NewServer(ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts), Nodes: s}))
	defer hs.Close()
	g0 := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	begin := time.Now()
	cs, err := client.StartPool(ctx, n, client.Config{Servers: []string{hs.URL}, TestDrivers: true, Resources: api.Resources{CPU: 1000, MemoryMB: 1024}}, &wg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		<-c.Registered()
	}
	t.Logf("%d registered in %v; goroutines %d -> %d", n, time.Since(begin), g0, runtime.NumGoroutine())
	time.Sleep(12 * time.Second)
	_, all, _ := ts.Server.State().Nodes(nil)
	down := 0
	for _, nd := range all {
		if nd.Status != "ready" {
			down++
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if len(all) != n || down != 0 || s.TrackedNodes() != n {
		t.Errorf("after 12s: %d nodes, %d not ready, %d tracked", len(all), down, s.TrackedNodes())
	}
	t.Logf("after 12s: %d nodes, %d not ready, tracked %d, goroutines %d, heap %d MB", len(all), down, s.TrackedNodes(), runtime.NumGoroutine(), ms.HeapAlloc>>20)
	cancel()
	wg.Wait()
}
