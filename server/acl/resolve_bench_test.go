package acl_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/fsm/raftfsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// BenchmarkResolve measures what every request pays to turn its secret
// into an authorizer, with 10,000 tokens and 1,000 policies in the store
// (each token linked to 3 policies), written through the real FSM.
func BenchmarkResolve(b *testing.B) {
	f := raftfsm.New(hclog.NewNullLogger())
	var idx uint64
	apply := func(t fsm.MessageType, req any) {
		idx++
		buf, err := fsm.Encode(t, req)
		if err != nil {
			b.Fatal(err)
		}
		if err, ok := f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: buf}).(error); ok {
			b.Fatal(err)
		}
	}
	policies := make([]state.ACLLink, 1000)
	for i := range policies {
		p := state.ACLPolicy{ID: uuid.NewString(), Name: fmt.Sprintf("p%d", i),
			Rules: fmt.Sprintf("acl = \"read\"\nnamespace \"ns-%d-*\" { policy = \"write\" }\n", i)}
		apply(fsm.ACLPolicySetType, &fsm.ACLPolicySetRequest{Policy: p})
		policies[i] = state.ACLLink{ID: p.ID, Name: p.Name}
	}
	secrets := make([]string, 10000)
	for i := range secrets {
		t := state.ACLToken{AccessorID: uuid.NewString(), SecretID: uuid.NewString(), Namespace: "default",
			CreateTime: time.Now(), Policies: []state.ACLLink{policies[i%1000], policies[(i+1)%1000], policies[(i+7)%1000]}}
		apply(fsm.ACLTokenSetType, &fsm.ACLTokenSetRequest{Token: t, Create: true})
		secrets[i] = t.SecretID
	}
	s := f.State()
	var r acl.Resolver
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		secret := secrets[rand.N(len(secrets))]
		start := time.Now()
		_, authz, err := r.Resolve(s, secret)
		lat = append(lat, time.Since(start))
		if err != nil || !authz.ACLRead() {
			b.Fatalf("resolve: %v", err)
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
