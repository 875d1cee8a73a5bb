package http_test

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

// TestAgentNomadClient: Agent().Self/Members/Health and Regions().List as
// `nomad agent-info`, `nomad node status -self`, `nomad server members`
// read them, on a dev agent with its simulated client node.
func TestAgentNomadClient(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodes(1))
	c := nomadClient(t, ts, "")
	var nodeID string
	for deadline := time.Now().Add(30 * time.Second); nodeID == ""; {
		nodes, _, err := c.Nodes().List(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) == 1 {
			nodeID = nodes[0].ID
		} else if time.Now().After(deadline) {
			t.Fatal("the dev client never registered")
		}
		time.Sleep(10 * time.Millisecond)
	}

	self, err := c.Agent().Self()
	if err != nil {
		t.Fatalf("Self: %v", err)
	}
	if self.Stats["client"]["node_id"] != nodeID || self.Stats["raft"]["state"] != "Leader" || self.Stats["nomad"]["leader"] != "true" ||
		self.Stats["runtime"]["goroutines"] == "" || self.Member.Name != ts.Config.NodeName+".global" || self.Member.Status != "alive" ||
		self.Config["Datacenter"] != "dc1" || self.Config["Region"] != "global" {
		t.Fatalf("Self: %+v", self)
	}
	if name, err := c.Agent().NodeName(); err != nil || name != ts.Config.NodeName+".global" {
		t.Errorf("NodeName: %q %v", name, err)
	}
	if dc, err := c.Agent().Datacenter(); err != nil || dc != "dc1" {
		t.Errorf("Datacenter: %q %v", dc, err)
	}
	if region, err := c.Agent().Region(); err != nil || region != "global" {
		t.Errorf("Region: %q %v", region, err)
	}

	members, err := c.Agent().Members()
	if err != nil || len(members.Members) != 1 || members.ServerRegion != "global" || members.ServerDC != "dc1" {
		t.Fatalf("Members: %v %+v", err, members)
	}
	m := members.Members[0]
	if m.Status != "alive" || m.Tags["raft_vsn"] != "3" || m.Tags["region"] != "global" || m.Tags["dc"] != "dc1" || m.Tags["build"] == "" ||
		m.Name != ts.Config.NodeName+".global" {
		t.Fatalf("member: %+v", m)
	}

	health, err := c.Agent().Health()
	if err != nil || health.Server == nil || !health.Server.Ok {
		t.Fatalf("Health: %v %+v", err, health)
	}
	regions, err := c.Regions().List()
	if err != nil || strings.Join(regions, ",") != "global" {
		t.Fatalf("Regions: %v %v", err, regions)
	}
}

// TestAgentMembersLeader: `nomad server members` marks the leader by
// comparing a member's Addr:Tags["port"] with the region's leader; on a
// server with a network Raft transport (not -dev, whose Raft is in memory)
// they match.
func TestAgentMembersLeader(t *testing.T) {
	ts := servertest.Start(t, servertest.Persistent(t.TempDir()), func(c *server.Config) { c.ACLEnabled = false })
	c := nomadClient(t, ts, "")
	members, err := c.Agent().Members()
	if err != nil || len(members.Members) != 1 {
		t.Fatalf("Members: %v %+v", err, members)
	}
	m := members.Members[0]
	leader, err := c.Status().RegionLeader("global")
	if err != nil || m.Port == 0 || leader != net.JoinHostPort(m.Addr, m.Tags["port"]) {
		t.Fatalf("leader %q (%v) is not member %s:%s", leader, err, m.Addr, m.Tags["port"])
	}
}

// TestAgentNomadClientACL: self needs operator:read and members node:read;
// health and regions need nothing.
func TestAgentNomadClientACL(t *testing.T) {
	const mgmt = "1f6c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b"
	s := acxStart(t, mgmt, servertest.ACL(mgmt))
	anon := nomadClient(t, s.TestServer, "")
	if _, err := anon.Agent().Self(); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("anonymous Self: %v", err)
	}
	if _, err := anon.Agent().Members(); err == nil || !strings.Contains(err.Error(), "403 (Permission denied)") {
		t.Fatalf("anonymous Members: %v", err)
	}
	if _, err := anon.Agent().Health(); err != nil {
		t.Fatalf("anonymous Health: %v", err)
	}
	if _, err := anon.Regions().List(); err != nil {
		t.Fatalf("anonymous Regions: %v", err)
	}
	op := nomadClient(t, s.TestServer, s.tokenWithRules(t, "op", `operator = "read"`+"\n"+`node = "read"`, "").SecretID)
	if self, err := op.Agent().Self(); err != nil || self.Stats["nomad"]["server"] != "true" {
		t.Fatalf("Self with operator:read: %v", err)
	}
	if m, err := op.Agent().Members(); err != nil || len(m.Members) != 1 {
		t.Fatalf("Members with node:read: %v", err)
	}
}

// TestAgentNomadClientCluster: on a 3-server cluster every server lists
// the three as members, exactly one of them the leader as `nomad server
// members` marks it; each server's self describes itself; a namespace and
// a search go through a follower.
func TestAgentNomadClientCluster(t *testing.T) {
	nodes := servertest.StartCluster(t, 3)
	leader := servertest.Leader(t, nodes)
	for _, n := range nodes {
		c := nomadClient(t, n, "")
		members, err := c.Agent().Members()
		if err != nil || len(members.Members) != 3 || members.ServerName != n.Config.NodeName {
			t.Fatalf("Members through %s: %v %+v", n.Config.NodeName, err, members)
		}
		leaderAddr, err := c.Status().RegionLeader("global")
		if err != nil || leaderAddr != leader.RaftAddr() {
			t.Fatalf("RegionLeader through %s: %q %v", n.Config.NodeName, leaderAddr, err)
		}
		leaders := 0
		for _, m := range members.Members {
			if m.Status != "alive" || m.Tags["raft_vsn"] != "3" {
				t.Errorf("member %+v", m)
			}
			if net.JoinHostPort(m.Addr, m.Tags["port"]) == leaderAddr {
				leaders++
			}
		}
		if leaders != 1 {
			t.Errorf("through %s: %d members match the leader %s", n.Config.NodeName, leaders, leaderAddr)
		}
		self, err := c.Agent().Self()
		if err != nil || self.Member.Name != n.Config.NodeName+".global" ||
			self.Stats["nomad"]["leader"] != strconv.FormatBool(n == leader) {
			t.Fatalf("Self of %s: %v %+v", n.Config.NodeName, err, self)
		}
	}
	var follower *servertest.TestServer
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	fc := nomadClient(t, follower, "")
	if _, err := fc.Namespaces().Register(&api.Namespace{Name: "prod"}, nil); err != nil {
		t.Fatalf("Register through a follower: %v", err)
	}
	r, _, err := fc.Search().PrefixSearch("pr", contexts.Namespaces, nil)
	if err != nil || strings.Join(r.Matches[contexts.Namespaces], ",") != "prod" {
		t.Fatalf("search through a follower: %v %+v", err, r)
	}
}
