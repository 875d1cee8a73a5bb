package state

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"
)

const namespacesTable = "namespaces"

// Namespace is one of Nomad's namespaces (the jobs side; binding rules and
// ACL objects keep their own Consul-style namespaces). Quota, capabilities
// and node pools are Enterprise features: accepted and not kept.
type Namespace struct {
	Name        string
	Description string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: namespacesTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}, func() any { return new(Namespace) })
}

// defaultNamespace always exists: a store without its row answers it as
// created at index 1, as Nomad creates it when its state store starts.
func defaultNamespace() *Namespace {
	return &Namespace{Name: DefaultNamespace, Description: "Default shared namespace", CreateIndex: 1, ModifyIndex: 1}
}

// NamespaceByName returns a namespace, or nil.
func (s *Store) NamespaceByName(ws memdb.WatchSet, name string) (uint64, *Namespace, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	ch, ns, err := namespaceTxn(txn, name)
	if err != nil {
		return 0, nil, err
	}
	ws.Add(ch)
	if ns == nil {
		watchTableIndex(txn, ws, namespacesTable)
	}
	return maxIndex(txn, namespacesTable), ns, nil
}

func namespaceTxn(txn *memdb.Txn, name string) (<-chan struct{}, *Namespace, error) {
	ch, raw, err := txn.FirstWatch(namespacesTable, "id", name)
	if err != nil {
		return nil, nil, fmt.Errorf("failed namespace lookup: %w", err)
	}
	switch {
	case raw != nil:
		return ch, raw.(*Namespace), nil
	case name == DefaultNamespace:
		return ch, defaultNamespace(), nil
	}
	return ch, nil, nil
}

// requireNamespaceTxn refuses a job whose namespace does not exist, with
// Nomad's text.
func requireNamespaceTxn(txn *memdb.Txn, job *Job) error {
	_, ns, err := namespaceTxn(txn, job.Namespace)
	if err != nil {
		return err
	}
	if ns == nil {
		return errorf(ErrInvalid, "job %q is in nonexistent namespace %q", job.ID, job.Namespace)
	}
	return nil
}

// JobRegisterInNamespace is JobRegister for a job whose namespace must
// exist (what the jobs endpoints write). JobRegister itself does not check:
// log entries written before namespaces existed replay as they applied.
func (s *Store) JobRegisterInNamespace(idx uint64, job *Job, eval *Evaluation) (*JobRegisterResult, error) {
	txn := s.db.Txn(false)
	err := requireNamespaceTxn(txn, job)
	if err == nil {
		err = requireNodePoolTxn(txn, job)
	}
	txn.Abort()
	if err != nil {
		return nil, err
	}
	return s.JobRegister(idx, job, eval)
}

// Namespaces lists the namespaces whose name starts with prefix, by name,
// default included.
func (s *Store) Namespaces(ws memdb.WatchSet, prefix string) (uint64, []*Namespace, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := txn.Get(namespacesTable, "id_prefix", prefix)
	if err != nil {
		return 0, nil, fmt.Errorf("failed namespace list: %w", err)
	}
	ws.Add(iter.WatchCh())
	out := []*Namespace{}
	sawDefault := false
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		ns := raw.(*Namespace)
		sawDefault = sawDefault || ns.Name == DefaultNamespace
		out = append(out, ns)
	}
	if !sawDefault && len(prefix) <= len(DefaultNamespace) && DefaultNamespace[:len(prefix)] == prefix {
		out = append(out, defaultNamespace())
		sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	}
	return maxIndex(txn, namespacesTable), out, nil
}

// NamespaceUpsert creates or replaces namespaces at idx (CreateIndex kept).
func (s *Store) NamespaceUpsert(idx uint64, namespaces []*Namespace) error {
	txn := s.writeTxn()
	defer txn.Abort()
	for _, ns := range namespaces {
		_, cur, err := namespaceTxn(txn, ns.Name)
		if err != nil {
			return err
		}
		c := *ns
		c.CreateIndex, c.ModifyIndex = idx, idx
		if cur != nil {
			c.CreateIndex = cur.CreateIndex
		}
		if err := txn.Insert(namespacesTable, &c); err != nil {
			return fmt.Errorf("failed inserting namespace: %w", err)
		}
	}
	if err := setIndex(txn, namespacesTable, idx); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// NamespaceDelete deletes namespaces at idx, all or none: default cannot
// be deleted, nor a namespace with a job that is not dead. The texts are
// Nomad 1.6's (Namespace.DeleteNamespaces, then its state store's);
// region is the cluster's, as Nomad lists the regions with such jobs.
func (s *Store) NamespaceDelete(idx uint64, names []string, region string) error {
	txn := s.writeTxn()
	defer txn.Abort()
	for _, name := range names {
		if name == DefaultNamespace {
			return errorf(ErrInvalid, "can not delete default namespace")
		}
	}
	for _, name := range names {
		raw, err := txn.First(namespacesTable, "id", name)
		if err != nil {
			return fmt.Errorf("failed namespace lookup: %w", err)
		}
		jobs, err := txn.Get(jobsTable, "id_prefix", name, "")
		if err != nil {
			return fmt.Errorf("failed job lookup: %w", err)
		}
		for j := jobs.Next(); j != nil; j = jobs.Next() {
			job := j.(*Job)
			if job.Namespace == name && job.Status != JobStatusDead {
				// Nomad's RPC collects these in a multierror.
				return errorf(ErrConflict, "%s", MultiErrorText([]string{fmt.Sprintf("namespace %q has non-terminal jobs in regions: [%s]", name, region)}))
			}
		}
		if raw == nil {
			return errorf(ErrNotFound, "namespace not found")
		}
		if err := txn.Delete(namespacesTable, raw); err != nil {
			return fmt.Errorf("failed deleting namespace: %w", err)
		}
	}
	if err := setIndex(txn, namespacesTable, idx); err != nil {
		return err
	}
	txn.Commit()
	return nil
}
