package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

const serversTable = "servers"

// ServerInfo is one server of the cluster as the others need to know it:
// enough to forward a request to it when it leads.
type ServerInfo struct {
	ID       string
	Name     string
	RaftAddr string
	HTTPAddr string
	// KeyHash is the SHA-256 (hex) of a random key the server keeps in its
	// data directory: only a join request presenting that key may change
	// this record.
	KeyHash string `json:",omitempty"`
	// ACLEnabled is the server's -acl-enabled; every server of a cluster
	// must agree.
	ACLEnabled  bool
	CreateIndex uint64
	ModifyIndex uint64
}

// Same says whether two records describe the server identically.
func (s *ServerInfo) Same(o *ServerInfo) bool {
	return s.ID == o.ID && s.Name == o.Name && s.RaftAddr == o.RaftAddr && s.HTTPAddr == o.HTTPAddr &&
		s.KeyHash == o.KeyHash && s.ACLEnabled == o.ACLEnabled
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: serversTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		},
	}, func() any { return new(ServerInfo) })
}

// Server returns the server with that Raft ID, or nil.
func (s *Store) Server(ws memdb.WatchSet, id string) (uint64, *ServerInfo, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	ch, raw, err := txn.FirstWatch(serversTable, "id", id)
	if err != nil {
		return 0, nil, fmt.Errorf("failed server lookup: %w", err)
	}
	ws.Add(ch)
	if raw == nil {
		return maxIndex(txn, serversTable), nil, nil
	}
	return maxIndex(txn, serversTable), raw.(*ServerInfo), nil
}

// Servers lists every known server by ID.
func (s *Store) Servers(ws memdb.WatchSet) (uint64, []*ServerInfo, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := txn.Get(serversTable, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("failed server list: %w", err)
	}
	ws.Add(iter.WatchCh())
	out := []*ServerInfo{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*ServerInfo))
	}
	return maxIndex(txn, serversTable), out, nil
}

// ServerSet records a server at Raft index idx.
func (s *Store) ServerSet(idx uint64, srv *ServerInfo) error {
	if srv.ID == "" {
		return errorf(ErrInvalid, "server is missing its ID")
	}
	txn := s.writeTxn()
	defer txn.Abort()
	stored := *srv
	stored.CreateIndex = idx
	if raw, err := txn.First(serversTable, "id", srv.ID); err != nil {
		return fmt.Errorf("failed server lookup: %w", err)
	} else if raw != nil {
		stored.CreateIndex = raw.(*ServerInfo).CreateIndex
	}
	stored.ModifyIndex = idx
	if err := txn.Insert(serversTable, &stored); err != nil {
		return fmt.Errorf("failed inserting server: %w", err)
	}
	if err := setIndex(txn, serversTable, idx); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// ServerDelete forgets a server at Raft index idx; forgetting an unknown one is a no-op.
func (s *Store) ServerDelete(idx uint64, id string) error {
	txn := s.writeTxn()
	defer txn.Abort()
	raw, err := txn.First(serversTable, "id", id)
	if err != nil {
		return fmt.Errorf("failed server lookup: %w", err)
	}
	if raw == nil {
		return nil
	}
	if err := txn.Delete(serversTable, raw); err != nil {
		return fmt.Errorf("failed deleting server: %w", err)
	}
	if err := setIndex(txn, serversTable, idx); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// Servers returns every server record of the snapshot.
func (s *Snapshot) Servers() ([]*ServerInfo, error) {
	iter, err := s.txn.Get(serversTable, "id")
	if err != nil {
		return nil, err
	}
	var out []*ServerInfo
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*ServerInfo))
	}
	return out, nil
}

// Server restores one server record as it was.
func (r *Restore) Server(srv *ServerInfo) error {
	if err := r.txn.Insert(serversTable, srv); err != nil {
		return fmt.Errorf("failed restoring server %s: %w", srv.ID, err)
	}
	return nil
}
