package server

import "testing"

// TestDevNodeGroupPool: a dev node group names its pool; "all" is refused
// as Nomad refuses a node registering there.
func TestDevNodeGroupPool(t *testing.T) {
	g, err := ParseDevNodeGroup("count=2,pool=gpu")
	if err != nil || g.NodePool != "gpu" || g.Count != 2 {
		t.Fatalf("%+v %v", g, err)
	}
	_, err = ParseDevNodeGroup("pool=all")
	if err == nil || err.Error() != `invalid dev node group "pool=all": pool: node is not allowed to register in node pool "all"` {
		t.Errorf("pool=all: %v", err)
	}
}
