package http

import (
	"net/http"
	"sort"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/servicereg"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

// ServiceRegistrationService is what DELETE /v1/service/:name/:id calls.
type ServiceRegistrationService interface {
	Delete(caller acl.Caller, ns, name, id string) (uint64, error)
}

// Nomad's native service discovery: the registrations the servers keep
// for running allocations, and the checks their clients run.
func (h *Handler) registerServiceRegistrations() {
	h.handle("/v1/services", methods{{http.MethodGet, h.serviceList}})
	h.handle("/v1/service/{name}", methods{{http.MethodGet, h.serviceRead}})
	h.handle("/v1/service/{name}/{id}", methods{{http.MethodDelete, h.serviceDelete}})
	h.handle("/v1/client/allocation/{alloc_id}/checks", methods{{http.MethodGet, h.allocChecks}})
	h.handle("/v1/job/{job}/services", methods{{http.MethodGet, h.jobServices}})
	h.handle("/v1/allocation/{alloc_id}/services", methods{{http.MethodGet, h.allocServices}})
}

// serviceStubs is one namespace's entry of GET /v1/services (Nomad's
// ServiceRegistrationListStub).
type serviceStubs struct {
	Namespace string
	Services  []*serviceStub
}

type serviceStub struct {
	ServiceName string
	Tags        []string
}

// serviceList is GET /v1/services: per namespace (`namespace`, `*` for
// every readable one) its services with the union of their tags, sorted.
func (h *Handler) serviceList(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	ns, err := jobNamespace(r, "", id, true)
	if err != nil {
		return nil, err
	}
	visible, err := servicereg.ReadServicesIn(id.caller(), ns)
	if err != nil {
		return nil, err
	}
	var regs []*state.ServiceRegistration
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, all, err := s.AllServices(ws, ns)
		regs = all
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	tags := map[string]map[string]map[string]bool{} // namespace → service → tags
	for _, reg := range regs {
		if !visible(reg.Namespace) {
			continue
		}
		if tags[reg.Namespace] == nil {
			tags[reg.Namespace] = map[string]map[string]bool{}
		}
		if tags[reg.Namespace][reg.ServiceName] == nil {
			tags[reg.Namespace][reg.ServiceName] = map[string]bool{}
		}
		for _, t := range reg.Tags {
			tags[reg.Namespace][reg.ServiceName][t] = true
		}
	}
	out := []*serviceStubs{}
	for _, n := range sortedKeys(tags) {
		e := &serviceStubs{Namespace: n, Services: []*serviceStub{}}
		for _, name := range sortedKeys(tags[n]) {
			e.Services = append(e.Services, &serviceStub{ServiceName: name, Tags: sortedKeys(tags[n][name])})
		}
		out = append(out, e)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// serviceRead is GET /v1/service/:name: the service's registrations in
// the namespace (blocking), by ID; none is an empty list, as Nomad's.
func (h *Handler) serviceRead(w http.ResponseWriter, r *http.Request) (any, error) {
	name := mux.Vars(r)["name"]
	var regs []*state.ServiceRegistration
	err := h.readNS(w, r, servicereg.ReadServices, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		idx, all, err := s.ServicesByName(ws, ns, name)
		regs = all
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	return regs, nil
}

// jobServices is GET /v1/job/:id/services: the job's registrations (read-job
// in the namespace, blocking on the registrations). As Nomad's, an unknown
// job is a 404 "job not found", a known one without any an empty list, and
// the index is the registrations table's.
func (h *Handler) jobServices(w http.ResponseWriter, r *http.Request) (any, error) {
	jobID := mux.Vars(r)["job"]
	var regs []*state.ServiceRegistration
	err := h.readNS(w, r, servicereg.ReadServices, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		idx, all, err := s.ServicesByJob(ws, ns, jobID)
		if err != nil {
			return 0, err
		}
		_, job, err := s.Job(ws, ns, jobID)
		regs = nil
		if job != nil {
			regs = all
		}
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	if regs == nil {
		return nil, notFound("job not found")
	}
	return regs, nil
}

// allocServices is GET /v1/allocation/:id/services: the allocation's
// registrations (read-job in the requested namespace, then a UUID). As
// Nomad's, an unknown allocation, or one of another namespace, is a 404 "alloc not
// found"; the index is the registrations table's.
func (h *Handler) allocServices(w http.ResponseWriter, r *http.Request) (any, error) {
	allocID := mux.Vars(r)["alloc_id"]
	var regs []*state.ServiceRegistration
	err := h.readNS(w, r, servicereg.ReadServices, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		if !isUUID(allocID) {
			// Nomad's memdb lookup fails with a 500 here; a bad ID is the caller's error.
			return 0, badRequest("Invalid allocation ID %q: a 36-character UUID is required", allocID)
		}
		idx, all, err := s.ServicesByAlloc(ws, allocID)
		if err != nil {
			return 0, err
		}
		_, alloc, err := s.Alloc(ws, allocID)
		regs = nil
		if alloc != nil && alloc.Namespace == ns {
			regs = all
		}
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	if regs == nil {
		return nil, notFound("alloc not found")
	}
	return regs, nil
}

// serviceDelete is DELETE /v1/service/:name/:id (submit-job).
func (h *Handler) serviceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	if h.services.Services == nil {
		return nil, &apiError{code: http.StatusNotImplemented, msg: "The services API is not served by this agent"}
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	ns, err := jobNamespace(r, "", id, false)
	if err != nil {
		return nil, err
	}
	v := mux.Vars(r)
	idx, err := h.services.Services.Delete(id.caller(), ns, v["name"], v["id"])
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, idx)
	return nil, nil
}

// allocChecks is GET /v1/client/allocation/:id/checks: the latest result
// of each of the allocation's checks, by check ID, as its client reported
// it (Nomad asks the client; read-job in the allocation's namespace).
func (h *Handler) allocChecks(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	allocID := mux.Vars(r)["alloc_id"]
	if !isUUID(allocID) {
		return nil, badRequest("Invalid allocation ID %q: a 36-character UUID is required", allocID)
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	caller := id.caller()
	var alloc *state.Allocation
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, a, err := s.Alloc(ws, allocID)
		if err == nil && a != nil {
			err = jobs.ReadJob(caller, a.Namespace)
		}
		alloc = a
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if alloc == nil {
		return nil, notFound("Unknown allocation \"" + allocID + "\"")
	}
	out := map[string]*state.CheckResult{}
	for k, v := range alloc.CheckResults {
		out[k] = v
	}
	return out, nil
}
