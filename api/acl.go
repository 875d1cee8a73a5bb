package api

import "time"

// Well-known IDs of the built-in ACL objects.
const (
	GlobalManagementPolicyID = "00000000-0000-0000-0000-000000000001"
	AnonymousTokenID         = "00000000-0000-0000-0000-000000000002"
)

// ACLPolicy is a policy of Consul's ACL API.
type ACLPolicy struct {
	ID          string
	Name        string
	Description string
	Rules       string
	Datacenters []string `json:",omitempty"`
	Hash        []byte
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLLink names a policy or role by ID or name.
type ACLLink struct {
	ID   string
	Name string `json:",omitempty"`
}

// ACLServiceIdentity is a service identity of a token or role.
type ACLServiceIdentity struct {
	ServiceName string
	Datacenters []string `json:",omitempty"`
}

// ACLNodeIdentity is a node identity of a token or role.
type ACLNodeIdentity struct {
	NodeName   string
	Datacenter string
}

// ACLRole is a named set of policies and identities.
type ACLRole struct {
	ID                string
	Name              string
	Description       string
	Policies          []ACLLink             `json:",omitempty"`
	ServiceIdentities []*ACLServiceIdentity `json:",omitempty"`
	NodeIdentities    []*ACLNodeIdentity    `json:",omitempty"`
	Hash              []byte
	CreateIndex       uint64
	ModifyIndex       uint64
}

// ACLToken is a token of Consul's ACL API.
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

// ACLAuthMethod is an auth method (type jwt).
type ACLAuthMethod struct {
	Name          string
	Type          string
	DisplayName   string        `json:",omitempty"`
	Description   string        `json:",omitempty"`
	MaxTokenTTL   time.Duration `json:",omitempty"`
	TokenLocality string        `json:",omitempty"`
	Config        map[string]any
	Namespace     string
	CreateIndex   uint64
	ModifyIndex   uint64
}

// BindingRule maps verified login claims to roles or identities.
type BindingRule struct {
	ID          string
	Description string
	AuthMethod  string
	Selector    string
	BindType    string
	BindName    string
	Namespace   string
	CreateIndex uint64
	ModifyIndex uint64
}
