package fsm

import "github.com/ctlplane/ctlplane/state"

// Message types of native service discovery (60–69). Registrations
// themselves are written by the allocation and node entries (the state
// store derives them); only an operator's delete is an entry of its own.
const ServiceDeleteType MessageType = 60

// ServiceDeleteRequest deletes one registration of a service.
type ServiceDeleteRequest struct {
	Namespace   string
	ServiceName string
	ID          string
}

// ServiceDelete applies a ServiceDeleteRequest.
var ServiceDelete = define(ServiceDeleteType, "service delete", func(s *state.Store, idx uint64, r *ServiceDeleteRequest) (Indexed, error) {
	return Indexed{Index: idx}, s.ServiceDelete(idx, r.Namespace, r.ServiceName, r.ID)
})
