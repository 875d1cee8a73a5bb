package operator_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/operator"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

func callerWith(t *testing.T, hcl string) acl.Caller {
	t.Helper()
	r, err := acl.Parse(hcl)
	if err != nil {
		t.Fatalf("rules %q: %v", hcl, err)
	}
	return acl.Caller{Authz: acl.NewAuthorizer([]*acl.Rules{r}), AccessorID: "accessor"}
}

// denied checks err is the Caller's refusal naming perm (http words it
// with Consul's text).
func denied(t *testing.T, what string, err error, perm string) {
	t.Helper()
	var d *acl.DeniedError
	if !errors.As(err, &d) || d.Perm != perm {
		t.Fatalf("%s: want a refusal naming %s, got %v", what, perm, err)
	}
}

// TestOperatorServiceChecksItsCaller: over a real single-node server, each
// operation decides first, without HTTP: Raft's configuration and the
// agent's reads need operator:read, removing a peer operator:write (before
// the id is looked at), snapshots management; then they act.
func TestOperatorServiceChecksItsCaller(t *testing.T) {
	ts := servertest.Start(t)
	s := operator.New(ts.Server)
	zero := acl.Caller{}
	opRead := callerWith(t, `operator = "read"`)
	opWrite := callerWith(t, `operator = "write"`)

	if _, err := s.Raft(zero); err == nil {
		t.Fatal("a zero Caller read Raft's configuration")
	} else {
		denied(t, "Raft(zero)", err, acl.PermOperatorRead)
	}
	denied(t, "ReadAgent(zero)", s.ReadAgent(zero), acl.PermOperatorRead)
	denied(t, "ReadAgent(node:read)", s.ReadAgent(callerWith(t, `node = "read"`)), acl.PermOperatorRead)
	denied(t, "RemoveServer(operator:read)", s.RemoveServer(opRead, ""), acl.PermOperatorWrite)
	_, err := s.Snapshots(opWrite)
	denied(t, "Snapshots(operator:write)", err, acl.PermManagement)

	if err := s.ReadAgent(opRead); err != nil {
		t.Fatalf("ReadAgent(operator:read): %v", err)
	}
	raft, err := s.Raft(opRead)
	if err != nil {
		t.Fatalf("Raft(operator:read): %v", err)
	}
	peers, index, err := raft.Configuration()
	if err != nil || len(peers) != 1 || index == 0 {
		t.Fatalf("configuration of a one-node cluster: %v at %d, %v", peers, index, err)
	}
	var se *state.Error
	if err := s.RemoveServer(opWrite, ""); !errors.As(err, &se) || se.Code != state.ErrInvalid ||
		se.Msg != "Must specify ?id with the ID of the server to remove" {
		t.Fatalf("RemoveServer without an id: %v", err)
	}
	snaps, err := s.Snapshots(acl.Internal())
	if err != nil {
		t.Fatalf("Snapshots(management): %v", err)
	}
	var archive bytes.Buffer
	if err := snaps.Save(&archive); err != nil || archive.Len() == 0 {
		t.Fatalf("Save: %d bytes, %v", archive.Len(), err)
	}
}
