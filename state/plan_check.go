package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// checkPlanTxn says why a plan no longer fits the state ("" when it does).
// Room on the nodes is read from usage: O(placements and stops), whatever
// the nodes already run.
func checkPlanTxn(txn *memdb.Txn, usage *nodeUsage, p *Plan) (string, error) {
	c := &planCheck{txn: txn, usage: usage, p: p, stopping: map[string]bool{}, freed: map[string]Resources{}}
	for _, check := range []func() (string, error){
		c.job, c.stops, c.followups, c.clientStates, c.inPlace, c.deploymentUpdates, c.placements,
	} {
		if reason, err := check(); err != nil || reason != "" {
			return reason, err
		}
	}
	return "", nil
}

// planCheck holds what one plan's checks share. Each check answers why
// the plan no longer fits ("" when it does), or an error of the store.
type planCheck struct {
	txn   *memdb.Txn
	usage *nodeUsage
	p     *Plan
	// stopping: the allocations the plan stops; freed: what the live ones
	// among them give back, per node (both filled by stops).
	stopping map[string]bool
	freed    map[string]Resources
}

// alloc reads allocation id (nil: it is gone).
func (c *planCheck) alloc(id string) (*Allocation, error) {
	raw, err := c.txn.First(allocsTable, "id", id)
	if err != nil {
		return nil, fmt.Errorf("failed allocation lookup: %w", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*Allocation), nil
}

// deployment reads deployment id (nil: it is gone).
func (c *planCheck) deployment(id string) (*Deployment, error) {
	raw, err := c.txn.First(deploymentsTable, "id", id)
	if err != nil {
		return nil, fmt.Errorf("failed deployment lookup: %w", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*Deployment), nil
}

// job: the job is still the version the plan was computed for.
func (c *planCheck) job() (string, error) {
	raw, err := c.txn.First(jobsTable, "id", c.p.Namespace, c.p.JobID)
	if err != nil {
		return "", fmt.Errorf("failed job lookup: %w", err)
	}
	var cur uint64
	if raw != nil {
		cur = raw.(*Job).JobModifyIndex
	}
	if cur != c.p.JobModifyIndex {
		return fmt.Sprintf("job %q changed since the plan was computed", c.p.JobID), nil
	}
	return "", nil
}

// stops: every allocation the plan stops still exists; notes what the
// live ones free.
func (c *planCheck) stops() (string, error) {
	for _, st := range c.p.Stops {
		a, err := c.alloc(st.AllocID)
		if err != nil {
			return "", err
		}
		if a == nil {
			return fmt.Sprintf("allocation %s is gone", st.AllocID), nil
		}
		if !c.stopping[a.ID] && !a.TerminalStatus() {
			c.freed[a.NodeID] = c.freed[a.NodeID].Plus(a.Resources, 1)
		}
		c.stopping[st.AllocID] = true
	}
	return "", nil
}

// followups: no other evaluation took care of a failed allocation meanwhile.
func (c *planCheck) followups() (string, error) {
	for _, fu := range c.p.Followups {
		a, err := c.alloc(fu.AllocID)
		if err != nil {
			return "", err
		}
		if a == nil {
			return fmt.Sprintf("allocation %s is gone", fu.AllocID), nil
		}
		if a.FollowupEvalID != "" || a.NextAllocation != "" {
			return fmt.Sprintf("allocation %s already has a follow-up", fu.AllocID), nil
		}
	}
	return "", nil
}

// clientStates: every allocation whose client status changes is still live
// and not stopped by this plan.
func (c *planCheck) clientStates() (string, error) {
	for _, cs := range c.p.ClientStates {
		a, err := c.alloc(cs.AllocID)
		if err != nil {
			return "", err
		}
		if a == nil || c.stopping[cs.AllocID] || a.TerminalStatus() {
			return fmt.Sprintf("allocation %s is gone or stopped", cs.AllocID), nil
		}
	}
	return "", nil
}

// inPlace: every allocation updated in place is still live.
func (c *planCheck) inPlace() (string, error) {
	for _, ip := range c.p.InPlace {
		a, err := c.alloc(ip.AllocID)
		if err != nil {
			return "", err
		}
		if a == nil || a.TerminalStatus() {
			return fmt.Sprintf("allocation %s is gone or stopped", ip.AllocID), nil
		}
	}
	return "", nil
}

// deploymentUpdates: every deployment the plan updates is still active, and
// still running when the plan ends it successful or blocked (a pause or a
// failure that came in meanwhile wins).
func (c *planCheck) deploymentUpdates() (string, error) {
	for _, u := range c.p.DeploymentUpdates {
		d, err := c.deployment(u.DeploymentID)
		if err != nil {
			return "", err
		}
		if d == nil || !d.Active() {
			return fmt.Sprintf("deployment %s is gone or no longer active", u.DeploymentID), nil
		}
		if (u.Status == DeploymentStatusSuccessful || u.Status == DeploymentStatusBlocked) && d.Status != DeploymentStatusRunning {
			return fmt.Sprintf("deployment %s is no longer running", u.DeploymentID), nil
		}
	}
	return "", nil
}

// takesPlacements says whether deployment id still takes placements: it
// runs (or the plan creates it), or it is paused and the placement is a
// migration (as in Nomad: a paused rollout must not block a drain).
func (c *planCheck) takesPlacements(id string, migration bool) (bool, error) {
	if c.p.Deployment != nil && c.p.Deployment.ID == id {
		return true, nil
	}
	d, err := c.deployment(id)
	if err != nil || d == nil {
		return false, err
	}
	return d.Status == DeploymentStatusRunning || (migration && d.Status == DeploymentStatusPaused), nil
}

// placementsOnNode is what a plan places on one node.
type placementsOnNode struct {
	need       Resources
	placements []*Allocation
	ports      []int
}

// placements: every placement's deployment still takes it, and every node
// placed on is ready with room and free ports for what the plan adds.
func (c *planCheck) placements() (string, error) {
	nodes, order, reason, err := c.placementsByNode()
	if err != nil || reason != "" {
		return reason, err
	}
	for _, nodeID := range order {
		if reason, err := c.nodeRoom(nodeID, nodes[nodeID]); err != nil || reason != "" {
			return reason, err
		}
	}
	return "", nil
}

// placementsByNode groups the placements by node, in the order of their
// first placement, checking each one's deployment.
func (c *planCheck) placementsByNode() (map[string]*placementsOnNode, []string, string, error) {
	// Migrations (placements replacing an allocation this plan stops as
	// migrated) may also go into a paused deployment.
	migrating := map[string]bool{}
	for _, st := range c.p.Stops {
		if st.DesiredDescription == AllocDescMigrating {
			migrating[st.AllocID] = true
		}
	}
	nodes := map[string]*placementsOnNode{}
	var order []string
	for _, pl := range c.p.Placements {
		if pl.DeploymentID != "" {
			ok, err := c.takesPlacements(pl.DeploymentID, migrating[pl.PreviousAllocation])
			if err != nil {
				return nil, nil, "", err
			}
			if !ok {
				return nil, nil, fmt.Sprintf("deployment %s is not running", pl.DeploymentID), nil
			}
		}
		n := nodes[pl.NodeID]
		if n == nil {
			n = &placementsOnNode{}
			nodes[pl.NodeID] = n
			order = append(order, pl.NodeID)
		}
		n.need = n.need.Plus(pl.Resources, 1)
		n.placements = append(n.placements, pl)
		for _, port := range pl.AllocatedPorts {
			n.ports = append(n.ports, port.Value)
		}
	}
	return nodes, order, "", nil
}

// nodeRoom: node nodeID is ready and has the CPU, memory and host ports
// for n: what the live allocations use, less what the plan stops, plus
// what it places.
func (c *planCheck) nodeRoom(nodeID string, n *placementsOnNode) (string, error) {
	raw, err := c.txn.First(nodesTable, "id", nodeID)
	if err != nil {
		return "", fmt.Errorf("failed node lookup: %w", err)
	}
	if raw == nil || !raw.(*Node).Ready() {
		return fmt.Sprintf("node %s is gone or not ready", nodeID), nil
	}
	node := raw.(*Node)
	used, held := c.usage.room(nodeID, n.ports)
	// What stays plus what is placed; freed (counted alike) is part
	// of used, so the difference is never negative.
	f := c.freed[nodeID]
	used.CPU, used.MemoryMB = used.CPU-f.CPU, used.MemoryMB-f.MemoryMB
	_, cpuOK := Room(node.Resources.CPU, used.CPU, n.need.CPU)
	_, memOK := Room(node.Resources.MemoryMB, used.MemoryMB, n.need.MemoryMB)
	if !cpuOK || !memOK {
		return fmt.Sprintf("node %s has no room left", nodeID), nil
	}
	return portCollision(node, held, c.stopping, n.placements), nil
}

// portCollision says which host port two allocations (or an allocation
// and the node's reserved ports) would share on node: the applier's
// guarantee that two plans computed side by side never hand out one port
// twice ("" if none). held lists, per port the placements ask for, the
// live allocations holding it; placements are the plan's on this node.
func portCollision(node *Node, held map[int][]string, stopping map[string]bool, placements []*Allocation) string {
	taken := map[int]string{}
	for _, pl := range placements {
		for _, port := range pl.AllocatedPorts {
			other, ok := taken[port.Value]
			if !ok {
				other, ok = holder(node, held[port.Value], stopping, port.Value)
			}
			if ok {
				return fmt.Sprintf("node %s: port %d (%s of allocation %s) is already taken by %s", node.ID, port.Value, port.Label, pl.ID, other)
			}
			taken[port.Value] = "allocation " + pl.ID
		}
	}
	return ""
}

// holder names what holds port on node before the plan: a live allocation
// the plan does not stop (the highest ID, as the node's allocations were
// listed in ID order), else the node's reserved ports.
func holder(node *Node, owners []string, stopping map[string]bool, port int) (string, bool) {
	best := ""
	for _, id := range owners {
		if !stopping[id] && id > best {
			best = id
		}
	}
	if best != "" {
		return "allocation " + best, true
	}
	for _, p := range node.ReservedPorts {
		if p == port {
			return "the node's reserved ports", true
		}
	}
	return "", false
}
