package state

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"
)

const aclTokensTable = "acl-tokens"

// The anonymous token stands for every request that carries no token.
const (
	AnonymousTokenID     = "00000000-0000-0000-0000-000000000002"
	AnonymousTokenSecret = "anonymous"
)

// ACLLink names a policy or a role a token or role is linked to.
type ACLLink struct {
	ID   string
	Name string `json:",omitempty"`
}

// ACLServiceIdentity grants a service's own permissions (stored, shown).
type ACLServiceIdentity struct {
	ServiceName string
	Datacenters []string `json:",omitempty"`
}

// ACLNodeIdentity grants a node's own permissions (stored, shown).
type ACLNodeIdentity struct {
	NodeName   string
	Datacenter string
}

// ACLToken is a secret and what it grants.
type ACLToken struct {
	AccessorID        string
	SecretID          string
	Description       string
	Policies          []ACLLink             `json:",omitempty"`
	Roles             []ACLLink             `json:",omitempty"`
	ServiceIdentities []*ACLServiceIdentity `json:",omitempty"`
	NodeIdentities    []*ACLNodeIdentity    `json:",omitempty"`
	Local             bool
	AuthMethod        string        `json:",omitempty"`
	ExpirationTime    *time.Time    `json:",omitempty"`
	ExpirationTTL     time.Duration `json:",omitempty"`
	CreateTime        time.Time
	Hash              []byte
	Namespace         string
	CreateIndex       uint64
	ModifyIndex       uint64
}

// Expired says whether the token has expired at now.
func (t *ACLToken) Expired(now time.Time) bool {
	return t.ExpirationTime != nil && !now.Before(*t.ExpirationTime)
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: aclTokensTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id":         {Name: "id", Unique: true, Indexer: &memdb.UUIDFieldIndex{Field: "AccessorID"}},
			"secret":     {Name: "secret", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "SecretID"}},
			"authmethod": {Name: "authmethod", AllowMissing: true, Indexer: &memdb.StringFieldIndex{Field: "AuthMethod"}},
		},
	}, func() any { return new(ACLToken) })
}

// ACLTokenByAccessor returns the token with that AccessorID, or nil.
func (s *Store) ACLTokenByAccessor(ws memdb.WatchSet, accessor string) (uint64, *ACLToken, error) {
	return getOne[ACLToken](s, ws, aclTokensTable, "id", accessor)
}

// ACLTokenBySecret returns the token with that SecretID, or nil: an index
// hit, never a scan.
func (s *Store) ACLTokenBySecret(ws memdb.WatchSet, secret string) (uint64, *ACLToken, error) {
	return getOne[ACLToken](s, ws, aclTokensTable, "secret", secret)
}

// ACLTokens lists the tokens keep accepts, by AccessorID.
func (s *Store) ACLTokens(ws memdb.WatchSet, keep func(*ACLToken) bool) (uint64, []*ACLToken, error) {
	return getAll(s, ws, aclTokensTable, keep)
}

// ACLTokenSet creates (create=true) or replaces a token. A replaced token
// keeps its SecretID, CreateTime, CreateIndex, AuthMethod and expiry.
func (s *Store) ACLTokenSet(idx uint64, t *ACLToken, create bool) (*ACLToken, error) {
	txn := s.writeTxn()
	defer txn.Abort()
	stored, err := aclTokenSetTxn(txn, idx, t, create)
	if err != nil {
		return nil, err
	}
	txn.Commit()
	return stored, nil
}

func aclTokenSetTxn(txn *memdb.Txn, idx uint64, t *ACLToken, create bool) (*ACLToken, error) {
	if t.AccessorID == "" {
		return nil, errorf(ErrInvalid, "token is missing its AccessorID")
	}
	stored := *t
	raw, err := txn.First(aclTokensTable, "id", t.AccessorID)
	if err != nil {
		return nil, fmt.Errorf("failed token lookup: %w", err)
	}
	if create {
		if raw != nil {
			return nil, errorf(ErrConflict, "Invalid Token: AccessorID is already in use")
		}
		if t.SecretID == "" {
			return nil, errorf(ErrInvalid, "token is missing its SecretID")
		}
		// A login token is minted after its auth method was read; refuse it
		// if the method has been deleted since, or its tokens would outlive
		// the cascade that deletes them.
		if t.AuthMethod != "" {
			if m, err := txn.First(aclAuthMethodsTable, "id", t.AuthMethod); err != nil {
				return nil, fmt.Errorf("failed auth method lookup: %w", err)
			} else if m == nil {
				return nil, errorf(ErrNotFound, "auth method %q not found", t.AuthMethod)
			}
		}
		if other, err := txn.First(aclTokensTable, "secret", t.SecretID); err != nil {
			return nil, fmt.Errorf("failed token lookup: %w", err)
		} else if other != nil {
			return nil, errorf(ErrConflict, "Invalid Token: SecretID is already in use")
		}
		stored.CreateIndex = idx
	} else {
		if raw == nil {
			return nil, errorf(ErrNotFound, "Cannot find token %s", t.AccessorID)
		}
		existing := raw.(*ACLToken)
		stored.SecretID = existing.SecretID
		stored.CreateTime = existing.CreateTime
		stored.CreateIndex = existing.CreateIndex
		stored.AuthMethod = existing.AuthMethod
		stored.ExpirationTime = existing.ExpirationTime
		stored.ExpirationTTL = existing.ExpirationTTL
	}
	stored.ModifyIndex = idx
	if err := txn.Insert(aclTokensTable, &stored); err != nil {
		return nil, fmt.Errorf("failed inserting token: %w", err)
	}
	return &stored, setIndex(txn, aclTokensTable, idx)
}

// ACLTokenDelete deletes a token; a missing one is ErrNotFound.
func (s *Store) ACLTokenDelete(idx uint64, accessor string) error {
	return deleteOne(s, idx, aclTokensTable, "id", accessor, "Cannot find token to delete")
}

// ACLTokensDeleteExpired deletes the listed tokens that have expired at now
// (a token renewed in between is kept), and returns how many it deleted.
func (s *Store) ACLTokensDeleteExpired(idx uint64, now time.Time, accessors []string) (int, error) {
	txn := s.writeTxn()
	defer txn.Abort()
	n := 0
	for _, id := range accessors {
		raw, err := txn.First(aclTokensTable, "id", id)
		if err != nil {
			return 0, fmt.Errorf("failed token lookup: %w", err)
		}
		if raw == nil || !raw.(*ACLToken).Expired(now) {
			continue
		}
		if err := txn.Delete(aclTokensTable, raw); err != nil {
			return 0, fmt.Errorf("failed deleting token: %w", err)
		}
		n++
	}
	if n > 0 {
		if err := setIndex(txn, aclTokensTable, idx); err != nil {
			return 0, err
		}
		txn.Commit()
	}
	return n, nil
}

// ACLTokenBySecretWatch finds the token of secret for a cache of resolved
// tokens: with it come the channels that close when the token's row, any
// policy or any role changes, which is everything a token's permissions are
// built from. A nil token is not found (and nothing to watch).
func (s *Store) ACLTokenBySecretWatch(secret string) (*ACLToken, []<-chan struct{}, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	ch, raw, err := txn.FirstWatch(aclTokensTable, "secret", secret)
	if err != nil {
		return nil, nil, fmt.Errorf("failed %s lookup: %w", aclTokensTable, err)
	}
	if raw == nil {
		return nil, nil, nil
	}
	watch := []<-chan struct{}{ch}
	for _, table := range []string{aclPoliciesTable, aclRolesTable} {
		tch, _, err := txn.FirstWatch(indexTable, "id", table)
		if err != nil {
			return nil, nil, fmt.Errorf("failed index lookup of %s: %w", table, err)
		}
		watch = append(watch, tch)
	}
	return raw.(*ACLToken), watch, nil
}
