package acl

import (
	"regexp"
	"strings"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

var (
	uuidRE         = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	identityNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9\-_]*[a-z0-9])?$`)
	aclNameRE      = regexp.MustCompile(`^[A-Za-z0-9\-_]{1,128}$`)
)

// linkFinder looks a link up by ID, else by name: found is false when
// there is no such object; err is a store failure.
type linkFinder func(id, name string) (link state.ACLLink, found bool, err error)

// resolveLinks turns links given by ID or name into stored links (ID and
// name), without duplicates; a link to nothing is a 400, a store failure
// is returned as it is.
func resolveLinks(links []state.ACLLink, kind string, find linkFinder) ([]state.ACLLink, error) {
	var out []state.ACLLink
	seen := map[string]bool{}
	for _, l := range links {
		if l.ID == "" && l.Name == "" {
			return nil, invalid("%s link is missing both an ID and a Name", kind)
		}
		if l.ID != "" && !uuidRE.MatchString(l.ID) {
			return nil, invalid("No such ACL %s with ID %q", kind, l.ID) // names nothing: not a store lookup
		}
		link, ok, err := find(l.ID, l.Name)
		if err != nil {
			return nil, err
		}
		if !ok {
			if l.ID != "" {
				return nil, invalid("No such ACL %s with ID %q", kind, l.ID)
			}
			return nil, invalid("No such ACL %s with name %q", kind, l.Name)
		}
		if !seen[link.ID] {
			seen[link.ID] = true
			out = append(out, link)
		}
	}
	return out, nil
}

// findPolicy looks a policy link up in st.
func findPolicy(st objectReader) linkFinder {
	return func(id, name string) (state.ACLLink, bool, error) {
		var p *state.ACLPolicy
		var err error
		if id != "" {
			_, p, err = st.ACLPolicy(memdb.NewWatchSet(), id)
		} else {
			_, p, err = st.ACLPolicyByName(memdb.NewWatchSet(), name)
		}
		if err != nil || p == nil {
			return state.ACLLink{}, false, err
		}
		return state.ACLLink{ID: p.ID, Name: p.Name}, true, nil
	}
}

// findRole looks a role link up in st.
func findRole(st objectReader) linkFinder {
	return func(id, name string) (state.ACLLink, bool, error) {
		var r *state.ACLRole
		var err error
		if id != "" {
			_, r, err = st.ACLRole(memdb.NewWatchSet(), id)
		} else {
			_, r, err = st.ACLRoleByName(memdb.NewWatchSet(), name)
		}
		if err != nil || r == nil {
			return state.ACLLink{}, false, err
		}
		return state.ACLLink{ID: r.ID, Name: r.Name}, true, nil
	}
}

// currentLinks re-reads linked objects: names as they are now, links to
// deleted objects dropped. get returns the current name ("" when gone).
func currentLinks(links []state.ACLLink, get func(id string) (string, error)) ([]state.ACLLink, error) {
	var out []state.ACLLink
	for _, l := range links {
		name, err := get(l.ID)
		if err != nil {
			return nil, err
		}
		if name != "" {
			out = append(out, state.ACLLink{ID: l.ID, Name: name})
		}
	}
	return out, nil
}

func policyName(ws memdb.WatchSet, st *state.Store) func(string) (string, error) {
	return func(id string) (string, error) {
		_, p, err := st.ACLPolicy(ws, id)
		if err != nil || p == nil {
			return "", err
		}
		return p.Name, nil
	}
}

func roleName(ws memdb.WatchSet, st *state.Store) func(string) (string, error) {
	return func(id string) (string, error) {
		_, r, err := st.ACLRole(ws, id)
		if err != nil || r == nil {
			return "", err
		}
		return r.Name, nil
	}
}

// validateIdentities checks service and node identities of a token or role.
func validateIdentities(services []*state.ACLServiceIdentity, nodes []*state.ACLNodeIdentity, owner string) error {
	for _, si := range services {
		if si == nil || si.ServiceName == "" {
			return invalid("Service identity is missing the service name field on this %s", owner)
		}
		if len(si.ServiceName) > 256 || !identityNameRE.MatchString(si.ServiceName) {
			return invalid("Service identity %q has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed", si.ServiceName)
		}
	}
	for _, ni := range nodes {
		if ni == nil || ni.NodeName == "" {
			return invalid("Node identity is missing the node name field on this %s", owner)
		}
		if ni.Datacenter == "" {
			return invalid("Node identity is missing the datacenter field on this %s", owner)
		}
		if len(ni.NodeName) > 256 || !identityNameRE.MatchString(ni.NodeName) {
			return invalid("Node identity has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed")
		}
	}
	return nil
}

// HasLink says whether links has one to id (any case).
func HasLink(links []state.ACLLink, id string) bool {
	for _, l := range links {
		if strings.EqualFold(l.ID, id) {
			return true
		}
	}
	return false
}
