package state

import "testing"

// A node's secret is found by NodeBySecret, never changes once minted (a
// second first registration racing the first loses in the FSM), and a
// node from before node secrets may get one.
func TestNodeSecretRules(t *testing.T) {
	s := NewStore()
	legacy := &Node{ID: idA, Name: "old", Datacenter: "dc1"}
	if err := s.NodeRegister(1, legacy, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := s.NodeBySecret(""); err != nil || n != nil {
		t.Fatalf("empty secret found %v %v", n, err)
	}
	minted := *legacy
	minted.SecretID = idC
	if err := s.NodeRegister(2, &minted, nil); err != nil {
		t.Fatalf("a legacy node gets a secret: %v", err)
	}
	n, err := s.NodeBySecret(idC)
	if err != nil || n == nil || n.ID != idA || n.CreateIndex != 1 || n.ModifyIndex != 2 {
		t.Fatalf("by secret: %+v %v", n, err)
	}
	other := minted
	other.SecretID = idD
	wantStateError(t, s.NodeRegister(3, &other, nil), ErrForbidden, "node secret ID does not match")
	if n, _ := s.NodeBySecret(idD); n != nil {
		t.Fatalf("the refused secret was stored: %+v", n)
	}
	if c, err := s.NodeCount(); err != nil || c != 1 {
		t.Fatalf("count %d %v", c, err)
	}
}
