package acl

// A store that fails is the server's problem: its error comes back with
// its cause, never as a 400 or a missing object.

import (
	"errors"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

var errDisk = errors.New("disk on fire")

// failingReader fails every lookup.
type failingReader struct{}

func (failingReader) ACLPolicy(memdb.WatchSet, string) (uint64, *state.ACLPolicy, error) {
	return 0, nil, errDisk
}
func (failingReader) ACLPolicyByName(memdb.WatchSet, string) (uint64, *state.ACLPolicy, error) {
	return 0, nil, errDisk
}
func (failingReader) ACLRole(memdb.WatchSet, string) (uint64, *state.ACLRole, error) {
	return 0, nil, errDisk
}
func (failingReader) ACLRoleByName(memdb.WatchSet, string) (uint64, *state.ACLRole, error) {
	return 0, nil, errDisk
}

func isStateError(err error) bool {
	var se *state.Error
	return errors.As(err, &se)
}

func TestLinkLookupStoreFailure(t *testing.T) {
	for _, tc := range []struct {
		kind string
		find linkFinder
		link state.ACLLink
	}{
		{"policy", findPolicy(failingReader{}), state.ACLLink{Name: "p"}},
		{"policy", findPolicy(failingReader{}), state.ACLLink{ID: "9d0b3c1a-5a8e-4f4b-9b1e-1c2d3e4f5a6b"}},
		{"role", findRole(failingReader{}), state.ACLLink{Name: "r"}},
		{"role", findRole(failingReader{}), state.ACLLink{ID: "9d0b3c1a-5a8e-4f4b-9b1e-1c2d3e4f5a6b"}},
	} {
		_, err := resolveLinks([]state.ACLLink{tc.link}, tc.kind, tc.find)
		if !errors.Is(err, errDisk) || isStateError(err) {
			t.Errorf("%s link %+v: got %v, want the store's error as it is", tc.kind, tc.link, err)
		}
	}
}

func TestAuthorizerStoreFailure(t *testing.T) {
	var r Resolver
	tok := &state.ACLToken{AccessorID: "a", Policies: []state.ACLLink{{ID: "p"}}}
	if _, err := r.authorizer(failingReader{}, tok); !errors.Is(err, errDisk) || !strings.Contains(err.Error(), "resolving policy p of token a") {
		t.Errorf("policy lookup failure: %v", err)
	}
	tok = &state.ACLToken{AccessorID: "a", Roles: []state.ACLLink{{ID: "r"}}}
	if _, err := r.authorizer(failingReader{}, tok); !errors.Is(err, errDisk) || !strings.Contains(err.Error(), "resolving role r of token a") {
		t.Errorf("role lookup failure: %v", err)
	}
}
