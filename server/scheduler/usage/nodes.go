package usage

import (
	"sort"
	"sync"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// NodeSource is what a node list is read from.
type NodeSource interface {
	AbandonCh() <-chan struct{}
	NodesIndex() uint64
	Nodes(ws memdb.WatchSet) (uint64, []*state.Node, error)
}

// NodeList is the cluster's nodes as of one index of the nodes table. It
// is read only: every evaluation that reads a state at that index shares
// it (listing, filtering and sorting 1,000 nodes per evaluation was 4% of
// the scheduler's CPU).
type NodeList struct {
	Index uint64
	// ByID holds every node, ready or not.
	ByID map[string]*state.Node
	// Ready are the ready nodes in ID order; Pos is a ready node's place
	// in Ready.
	Ready []*state.Node
	Pos   map[string]int

	classesOnce sync.Once
	classes     Classes
}

// Classes groups the ready nodes by computed class: Keys[ClassOf[i]] is
// the class of Ready[i], the classes numbered in the order their first
// node comes in Ready.
type Classes struct {
	Keys    []string
	ClassOf []int32
}

// Classes returns the ready nodes' classes, computed at the first call (a
// list is shared by every evaluation at its index, so the scheduler's
// per-class checks do not hash each node's class string again).
func (l *NodeList) Classes() *Classes {
	l.classesOnce.Do(func() {
		ids := map[string]int32{}
		l.classes.ClassOf = make([]int32, len(l.Ready))
		for i, n := range l.Ready {
			key := n.ComputedClass()
			id, ok := ids[key]
			if !ok {
				id = int32(len(l.classes.Keys))
				ids[key] = id
				l.classes.Keys = append(l.classes.Keys, key)
			}
			l.classes.ClassOf[i] = id
		}
	})
	return &l.classes
}

// NewNodeList indexes nodes, read at index idx.
func NewNodeList(idx uint64, nodes []*state.Node) *NodeList {
	l := &NodeList{Index: idx, ByID: make(map[string]*state.Node, len(nodes))}
	for _, n := range nodes {
		l.ByID[n.ID] = n
		if n.Ready() {
			l.Ready = append(l.Ready, n)
		}
	}
	sort.Slice(l.Ready, func(i, j int) bool { return l.Ready[i].ID < l.Ready[j].ID })
	l.Pos = make(map[string]int, len(l.Ready))
	for i, n := range l.Ready {
		l.Pos[n.ID] = i
	}
	return l
}

// ReadNodeList lists snap's nodes.
func ReadNodeList(snap NodeSource) (*NodeList, error) {
	idx, nodes, err := snap.Nodes(nil)
	if err != nil {
		return nil, err
	}
	return NewNodeList(idx, nodes), nil
}

// Nodes keeps the NodeList of the latest nodes index it read. Every node
// write moves that index, so a list at the same index of the same store
// is the same list.
type Nodes struct {
	mu      sync.Mutex
	abandon <-chan struct{}
	list    *NodeList
}

// List returns snap's node list, read again only when the nodes changed.
// A state older than the list kept gets a list of its own.
func (c *Nodes) List(snap NodeSource) (*NodeList, error) {
	idx, abandon := snap.NodesIndex(), snap.AbandonCh()
	c.mu.Lock()
	if l := c.list; l != nil && c.abandon == abandon && l.Index == idx {
		c.mu.Unlock()
		return l, nil
	}
	c.mu.Unlock()
	l, err := ReadNodeList(snap)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.list == nil || c.abandon != abandon || l.Index > c.list.Index {
		c.abandon, c.list = abandon, l
	}
	return l, nil
}

// NodeList returns snap's node list from the view's cache (the scheduler's
// NodeListSource).
func (v *View) NodeList(snap NodeSource) (*NodeList, error) { return v.nodeList.List(snap) }
