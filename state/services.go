package state

import (
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/go-memdb"
)

// Native service discovery (Nomad's provider = "nomad"): a job's service
// blocks, and the registrations the FSM derives from its allocations.

// ServiceProviderNomad is the only provider ctlplane serves.
const ServiceProviderNomad = "nomad"

// Check types, modes and statuses (Nomad's values).
const (
	ServiceCheckHTTP = "http"
	ServiceCheckTCP  = "tcp"

	CheckModeHealthiness = "healthiness"
	CheckModeReadiness   = "readiness"

	CheckStatusSuccess = "success"
	CheckStatusFailure = "failure"
	CheckStatusPending = "pending"

	OnUpdateRequireHealthy = "require_healthy"
	OnUpdateIgnore         = "ignore"
)

// Service is a group's or task's service block (Nomad's structs.Service,
// the fields native discovery uses).
type Service struct {
	Name        string
	TaskName    string
	PortLabel   string
	AddressMode string
	Tags        []string
	CanaryTags  []string
	Provider    string
	Namespace   string
	OnUpdate    string
	Checks      []*ServiceCheck
}

// ServiceCheck is a check of a service, run by the client (Nomad's
// structs.ServiceCheck for the nomad provider).
type ServiceCheck struct {
	Name         string
	Type         string
	Path         string
	Protocol     string
	Method       string
	Body         string
	Header       map[string][]string
	PortLabel    string
	AddressMode  string
	Interval     time.Duration
	Timeout      time.Duration
	TaskName     string
	OnUpdate     string
	CheckRestart *CheckRestart
}

// CheckRestart restarts a task after Limit consecutive failures, once
// Grace has passed since it (re)started.
type CheckRestart struct {
	Limit          int
	Grace          time.Duration
	IgnoreWarnings bool
}

// CheckResult is the latest result of one check of an allocation (Nomad's
// structs.CheckQueryResult), as the client reports it.
type CheckResult struct {
	ID         string `codec:",omitempty"`
	Check      string `codec:",omitempty"`
	Group      string `codec:",omitempty"`
	Task       string `json:",omitempty"`
	Service    string `codec:",omitempty"`
	Status     string `codec:",omitempty"`
	StatusCode int    `json:",omitempty"`
	Output     string `codec:",omitempty"`
	Mode       string `codec:",omitempty"`
	Timestamp  int64  `codec:",omitempty"`
}

const servicesTable = "service_registrations"

// ServiceRegistration is one instance of a service (Nomad's
// structs.ServiceRegistration).
type ServiceRegistration struct {
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	Address     string
	Port        int
	CreateIndex uint64
	ModifyIndex uint64
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: servicesTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
			"service": {Name: "service", Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "ServiceName"},
			}}},
			"alloc": {Name: "alloc", Indexer: &memdb.StringFieldIndex{Field: "AllocID"}},
			"job": {Name: "job", AllowMissing: true, Indexer: &memdb.CompoundIndex{AllowMissing: true, Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "JobID"},
			}}},
			"node": {Name: "node", Indexer: &memdb.StringFieldIndex{Field: "NodeID"}},
		},
	}, func() any { return new(ServiceRegistration) })
}

// AllServices lists the registrations of namespace ns (AllNamespaces:
// every one), by ID.
func (s *Store) AllServices(ws memdb.WatchSet, ns string) (uint64, []*ServiceRegistration, error) {
	return getAll(s, ws, servicesTable, func(r *ServiceRegistration) bool { return ns == AllNamespaces || r.Namespace == ns })
}

// ServicesByName lists the registrations of one service, by ID.
func (s *Store) ServicesByName(ws memdb.WatchSet, ns, name string) (uint64, []*ServiceRegistration, error) {
	return getByIndex[ServiceRegistration](s, ws, servicesTable, "service", ns, name)
}

// ServicesByAlloc lists an allocation's registrations, by ID.
func (s *Store) ServicesByAlloc(ws memdb.WatchSet, allocID string) (uint64, []*ServiceRegistration, error) {
	return getByIndex[ServiceRegistration](s, ws, servicesTable, "alloc", allocID)
}

// ServicesByJob lists the registrations of job id in namespace ns, by ID.
func (s *Store) ServicesByJob(ws memdb.WatchSet, ns, id string) (uint64, []*ServiceRegistration, error) {
	return getByIndex[ServiceRegistration](s, ws, servicesTable, "job", ns, id)
}

// ServiceDelete removes one registration of service name in namespace ns.
// Its allocation registers it again only when it changes (as Nomad's
// client would at its next sync).
func (s *Store) ServiceDelete(idx uint64, ns, name, id string) error {
	txn := s.writeTxn()
	defer txn.Abort()
	raw, err := txn.First(servicesTable, "id", id)
	if err != nil {
		return fmt.Errorf("failed service registration lookup: %w", err)
	}
	if raw == nil || raw.(*ServiceRegistration).Namespace != ns || raw.(*ServiceRegistration).ServiceName != name {
		return errorf(ErrNotFound, "service registration not found")
	}
	if err := txn.Delete(servicesTable, raw); err != nil {
		return fmt.Errorf("failed deleting service registration: %w", err)
	}
	if err := setIndex(txn, servicesTable, idx); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// ServiceRegistrationID is Nomad's MakeAllocServiceID: a group service is
// named after "group-<group>", a task's after its task.
func ServiceRegistrationID(allocID, owner string, svc *Service) string {
	return fmt.Sprintf("_nomad-task-%s-%s-%s-%s", allocID, owner, svc.Name, svc.PortLabel)
}

// updateServicesTxn keeps the registrations in step with the allocations
// and nodes a transaction changed: a running allocation has one per
// service of its group and tasks; a stopped, failed, lost or collected one
// has none, nor has any allocation of a node that went down.
func updateServicesTxn(txn *memdb.Txn, idx uint64, changes memdb.Changes) error {
	wrote := false
	for _, c := range changes {
		switch c.Table {
		case allocsTable:
			before, after := allocChange(c)
			if after == nil {
				n, err := deleteServicesTxn(txn, "alloc", before.ID)
				if err != nil {
					return err
				}
				wrote = wrote || n > 0
				continue
			}
			wasLive := before != nil && registered(before)
			if !wasLive && !registered(after) {
				continue // never had any, has none now
			}
			if wasLive && registered(after) && before.JobVersion == after.JobVersion && isCanary(before) == isCanary(after) {
				continue // nothing the registrations depend on changed
			}
			w, err := syncAllocServicesTxn(txn, idx, after)
			if err != nil {
				return err
			}
			wrote = wrote || w
		case nodesTable:
			if c.After == nil || c.After.(*Node).Status == NodeStatusDown {
				id := ""
				if c.After != nil {
					id = c.After.(*Node).ID
				} else {
					id = c.Before.(*Node).ID
				}
				n, err := deleteServicesTxn(txn, "node", id)
				if err != nil {
					return err
				}
				wrote = wrote || n > 0
			}
		}
	}
	if wrote {
		return setIndex(txn, servicesTable, idx)
	}
	return nil
}

// registered says whether the allocation has registrations: it runs and
// is meant to.
func registered(a *Allocation) bool {
	return a.ClientStatus == AllocClientStatusRunning && a.DesiredStatus == AllocDesiredStatusRun
}

func isCanary(a *Allocation) bool { return a.DeploymentStatus != nil && a.DeploymentStatus.Canary }

func deleteServicesTxn(txn *memdb.Txn, index, key string) (int, error) {
	n, err := txn.DeleteAll(servicesTable, index, key)
	if err != nil {
		return 0, fmt.Errorf("failed deleting service registrations: %w", err)
	}
	return n, nil
}

// syncAllocServicesTxn makes the allocation's registrations what its job
// version asks for (none unless it runs), writing only what differs.
func syncAllocServicesTxn(txn *memdb.Txn, idx uint64, a *Allocation) (bool, error) {
	want := map[string]*ServiceRegistration{}
	if registered(a) {
		raw, err := txn.First(jobVersionsTable, "id", a.Namespace, a.JobID, a.JobVersion)
		if err != nil {
			return false, fmt.Errorf("failed job lookup: %w", err)
		}
		var tg *TaskGroup
		if raw != nil {
			tg = raw.(*Job).LookupTaskGroup(a.TaskGroup)
		}
		if tg != nil && tg.HasServices() {
			node := &Node{}
			if raw, err := txn.First(nodesTable, "id", a.NodeID); err != nil {
				return false, fmt.Errorf("failed node lookup: %w", err)
			} else if raw != nil {
				node = raw.(*Node)
			}
			for _, r := range AllocRegistrations(a, tg, node) {
				want[r.ID] = r
			}
		}
	}
	have, err := listTxn[ServiceRegistration](txn, nil, servicesTable, "alloc", a.ID)
	if err != nil {
		return false, err
	}
	wrote := false
	for _, h := range have {
		if w, ok := want[h.ID]; ok && sameRegistration(h, w) {
			delete(want, h.ID)
			continue
		} else if ok {
			w.CreateIndex = h.CreateIndex
			continue
		}
		if err := txn.Delete(servicesTable, h); err != nil {
			return false, fmt.Errorf("failed deleting service registration: %w", err)
		}
		wrote = true
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := want[id]
		if r.CreateIndex == 0 {
			r.CreateIndex = idx
		}
		r.ModifyIndex = idx
		if err := txn.Insert(servicesTable, r); err != nil {
			return false, fmt.Errorf("failed inserting service registration: %w", err)
		}
		wrote = true
	}
	return wrote, nil
}

func sameRegistration(a, b *ServiceRegistration) bool {
	if a.ServiceName != b.ServiceName || a.Address != b.Address || a.Port != b.Port || a.NodeID != b.NodeID ||
		a.Datacenter != b.Datacenter || len(a.Tags) != len(b.Tags) {
		return false
	}
	for i := range a.Tags {
		if a.Tags[i] != b.Tags[i] {
			return false
		}
	}
	return true
}

// HasServices says whether the group or any of its tasks has a service.
func (tg *TaskGroup) HasServices() bool {
	if len(tg.Services) > 0 {
		return true
	}
	for _, t := range tg.Tasks {
		if len(t.Services) > 0 {
			return true
		}
	}
	return false
}

// AllocRegistrations are the registrations of a running allocation of
// group tg on node: address and port are the host IP and host port of the
// service's port label (none: the node's address and port 0); a canary
// carries its CanaryTags when it has some.
func AllocRegistrations(a *Allocation, tg *TaskGroup, node *Node) []*ServiceRegistration {
	var out []*ServiceRegistration
	add := func(owner string, svc *Service) {
		r := &ServiceRegistration{
			ID: ServiceRegistrationID(a.ID, owner, svc), ServiceName: svc.Name, Namespace: a.Namespace,
			NodeID: a.NodeID, Datacenter: node.Datacenter, JobID: a.JobID, AllocID: a.ID, Tags: svc.Tags,
			Address: node.Attributes["unique.network.ip-address"],
		}
		if isCanary(a) && len(svc.CanaryTags) > 0 {
			r.Tags = svc.CanaryTags
		}
		for _, p := range a.AllocatedPorts {
			if p.Label == svc.PortLabel {
				r.Address, r.Port = p.HostIP, p.Value
			}
		}
		out = append(out, r)
	}
	for _, svc := range tg.Services {
		add("group-"+tg.Name, svc)
	}
	for _, t := range tg.Tasks {
		for _, svc := range t.Services {
			add(t.Name, svc)
		}
	}
	return out
}
