package state

import (
	"encoding/binary"
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// The list order of deployments is ascending CreateIndex, then ID (as Go
// compares strings). Two indexes hold it so that a page is read from where it
// starts instead of sorting the table: "create" across every namespace and
// "ns_create" within one.
//
// Keys: [Namespace 0x00] CreateIndex (8 bytes, big-endian) ID 0x00, the bytes
// a compound of memdb's String/UintFieldIndex would build; this indexer also
// takes a raw bound, which the reverse seek from the end of a namespace
// needs. Big-endian keeps numeric order, and the ID's terminating 0x00 keeps
// Go's string order between IDs of different lengths (stored IDs never hold
// a 0x00: the id index takes only UUIDs).
const (
	deploymentsCreateIndex   = "create"
	deploymentsNsCreateIndex = "ns_create"
)

// deploymentOrderIndexer builds those keys from a *Deployment. Lookups take
// one []byte argument, a key (or bound) made by deploymentOrderKey.
type deploymentOrderIndexer struct{ namespace bool }

func (x deploymentOrderIndexer) FromObject(obj any) (bool, []byte, error) {
	d, ok := obj.(*Deployment)
	if !ok {
		return false, nil, fmt.Errorf("deployment order index: %T is not a *Deployment", obj)
	}
	ns := ""
	if x.namespace {
		ns = d.Namespace
	}
	return true, deploymentOrderKey(x.namespace, ns, d.CreateIndex, d.ID), nil
}

func (x deploymentOrderIndexer) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("deployment order index: want one key argument, got %d", len(args))
	}
	key, ok := args[0].([]byte)
	if !ok {
		return nil, fmt.Errorf("deployment order index: argument is %T, want []byte", args[0])
	}
	return key, nil
}

func deploymentOrderKey(withNamespace bool, ns string, createIndex uint64, id string) []byte {
	key := make([]byte, 0, len(ns)+1+8+len(id)+1)
	if withNamespace {
		key = append(key, ns...)
		key = append(key, 0)
	}
	key = binary.BigEndian.AppendUint64(key, createIndex)
	key = append(key, id...)
	return append(key, 0)
}

// DeploymentListQuery says which deployments a list walks and from where.
type DeploymentListQuery struct {
	// Namespace, or AllNamespaces for every one.
	Namespace string
	// Prefix, when set, lists the deployments whose ID starts with it (an
	// even number of hex digits, hyphens ignored) in ID order instead of the
	// CreateIndex order.
	Prefix  string
	Reverse bool
	// TokenID, when set, is where the walk starts (a next_token): the
	// deployment with that ID, or, with TokenHasIndex, the first deployment
	// at or after (CreateIndex, ID) = (TokenIndex, TokenID) in walking order.
	// With a prefix both forms compare IDs only. A bare ID that names no
	// deployment of the namespace (in CreateIndex order) leaves nothing to
	// resume from: the walk is empty.
	TokenID       string
	TokenIndex    uint64
	TokenHasIndex bool
}

// DeploymentsWalk calls visit with the deployments of q in list order (oldest
// first: CreateIndex, then ID; by ID with a prefix; backwards with Reverse)
// from q's token on, until visit says stop (false) or fails (its error is
// returned). It reads only what it visits, plus the rows of other
// namespaces a prefix walk passes over. ws fires on any change to the table.
func (s *Store) DeploymentsWalk(ws memdb.WatchSet, q DeploymentListQuery, visit func(*Deployment) (bool, error)) (uint64, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	watchTableIndex(txn, ws, deploymentsTable)
	idx := maxIndex(txn, deploymentsTable)
	var err error
	if q.Prefix != "" {
		err = walkDeploymentsByPrefix(txn, q, visit)
	} else {
		err = walkDeploymentsInOrder(txn, q, visit)
	}
	return idx, err
}

// walkDeploymentsByPrefix walks the id_prefix index, in ID order or
// backwards, passing over the deployments before the token.
func walkDeploymentsByPrefix(txn *memdb.Txn, q DeploymentListQuery, visit func(*Deployment) (bool, error)) error {
	get := txn.Get
	if q.Reverse {
		get = txn.GetReverse
	}
	iter, err := get(deploymentsTable, "id_prefix", q.Prefix)
	if err != nil {
		return fmt.Errorf("failed deployment list: %w", err)
	}
	started := q.TokenID == ""
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		d := raw.(*Deployment)
		if q.Namespace != AllNamespaces && d.Namespace != q.Namespace {
			continue
		}
		if !started {
			if (!q.Reverse && d.ID < q.TokenID) || (q.Reverse && d.ID > q.TokenID) {
				continue
			}
			started = true
		}
		if more, err := visit(d); err != nil || !more {
			return err
		}
	}
	return nil
}

// walkDeploymentsInOrder walks the CreateIndex order from a seek to the
// token (or to the first or last deployment of the namespace).
func walkDeploymentsInOrder(txn *memdb.Txn, q DeploymentListQuery, visit func(*Deployment) (bool, error)) error {
	all := q.Namespace == AllNamespaces
	index := deploymentsNsCreateIndex
	if all {
		index = deploymentsCreateIndex
	}
	var bound []byte
	switch {
	case q.TokenID != "" && q.TokenHasIndex:
		bound = deploymentOrderKey(!all, q.Namespace, q.TokenIndex, q.TokenID)
	case q.TokenID != "":
		// A bare ID: that very deployment, if it is still listed here.
		raw, err := txn.First(deploymentsTable, "id", q.TokenID)
		if err != nil || raw == nil {
			return nil // not a UUID, or no such deployment
		}
		d := raw.(*Deployment)
		if d.ID != q.TokenID || (!all && d.Namespace != q.Namespace) {
			return nil // another spelling of the ID, or another namespace
		}
		bound = deploymentOrderKey(!all, q.Namespace, d.CreateIndex, d.ID)
	case all:
		// No token: from either end of the whole index.
	case q.Reverse:
		// Past every key of the namespace ("<ns>\x00..." < "<ns>\x01").
		bound = append([]byte(q.Namespace), 1)
	default:
		bound = append([]byte(q.Namespace), 0)
	}
	var iter memdb.ResultIterator
	var err error
	switch {
	case bound == nil && q.Reverse:
		iter, err = txn.GetReverse(deploymentsTable, deploymentsCreateIndex)
	case bound == nil:
		iter, err = txn.Get(deploymentsTable, deploymentsCreateIndex)
	case q.Reverse:
		iter, err = txn.ReverseLowerBound(deploymentsTable, index, bound)
	default:
		iter, err = txn.LowerBound(deploymentsTable, index, bound)
	}
	if err != nil {
		return fmt.Errorf("failed deployment list: %w", err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		d := raw.(*Deployment)
		if !all && d.Namespace != q.Namespace {
			return nil // past the namespace's range
		}
		if more, err := visit(d); err != nil || !more {
			return err
		}
	}
	return nil
}

// Deployments lists the deployments of namespace ns (AllNamespaces: every
// one): oldest first (CreateIndex, then ID), or, when prefix is given (an
// even number of hex digits, hyphens ignored), the deployments whose ID
// starts with it in ID order.
func (s *Store) Deployments(ws memdb.WatchSet, ns, prefix string) (uint64, []*Deployment, error) {
	out := []*Deployment{}
	idx, err := s.DeploymentsWalk(ws, DeploymentListQuery{Namespace: ns, Prefix: prefix}, func(d *Deployment) (bool, error) {
		out = append(out, d)
		return true, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return idx, out, nil
}
