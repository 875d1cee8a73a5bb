package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdRef is the etcd the creates are compared with: one gRPC connection
// per concurrent client (as ctlplane's clients each have one HTTP
// connection), puts of 256 B values to fresh keys.
type etcdRef struct {
	members  int
	peerTLS  bool   // the members replicate over mutual TLS
	endpoint string // the leader's client address
	version  string
	clients  []*clientv3.Client
	seq      atomic.Int64
	value    string
	stop     func()
	pid      int // the leader's process when started here (0: unknown)
}

// startEtcdRef starts an etcd of members members in a temporary directory
// (with peerTLS, its members talk mutual TLS), or uses the one at endpoints.
func startEtcdRef(ctx context.Context, members int, peerTLS bool, endpoints []string, maxClients int) (*etcdRef, error) {
	ref := &etcdRef{members: members, peerTLS: peerTLS, stop: func() {}}
	if len(endpoints) == 0 {
		dir, err := os.MkdirTemp("", "ctlplane-loadgen-etcd-")
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "loadgen: starting a %d-member etcd in %s (%s)\n", members, dir, ref.peers())
		e, err := benchutil.StartEtcd(ctx, dir, members, peerTLS)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		ref.stop = func() { e.Stop(); os.RemoveAll(dir) }
		ref.version = e.Version
		if ref.endpoint, err = e.Leader(ctx); err != nil {
			ref.stop()
			return nil, err
		}
		if i := slices.Index(e.Endpoints, ref.endpoint); i >= 0 {
			ref.pid = e.Pids()[i]
		}
	} else {
		ref.endpoint, ref.members, ref.version = endpoints[0], len(endpoints), "external"
	}
	buf := make([]byte, 128)
	rand.Read(buf)
	ref.value = fmt.Sprintf("%x", buf) // 256 B
	for range maxClients {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ref.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			ref.close()
			return nil, err
		}
		ref.clients = append(ref.clients, c)
	}
	return ref, nil
}

// peers says how the members replicate, for the tables.
func (r *etcdRef) peers() string {
	switch {
	case r.members < 2:
		return "no peers"
	case r.version == "external":
		return "peers as configured"
	case r.peerTLS:
		return "peers over mutual TLS"
	}
	return "peers without TLS"
}

func (r *etcdRef) close() {
	for _, c := range r.clients {
		c.Close()
	}
	r.stop()
}

// put writes one fresh key through client w's connection.
func (r *etcdRef) put(ctx context.Context, w int) benchutil.Response {
	key := fmt.Sprintf("bench/%012d", r.seq.Add(1))
	if _, err := r.clients[w%len(r.clients)].Put(ctx, key, r.value); err != nil {
		return benchutil.Response{Err: err}
	}
	return benchutil.Response{Status: 200}
}
