package http

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state/stream"
)

// TestEventStreamTopicsAskTheirFamily: each topic's events reach a token
// only as a read of the object would (the family's read rule): read-job
// for jobs, evaluations, allocations, deployments and services in their
// namespace, node:read for nodes, acl:read for ACL objects; an unknown
// topic reaches no one.
func TestEventStreamTopicsAskTheirFamily(t *testing.T) {
	caller := func(hcl string) acl.Caller {
		r, err := acl.Parse(hcl)
		if err != nil {
			t.Fatalf("rules %q: %v", hcl, err)
		}
		return acl.Caller{Authz: acl.NewAuthorizer([]*acl.Rules{r}), AccessorID: "accessor"}
	}
	readJobWeb := caller(`namespace "web" { capabilities = ["read-job"] }`)
	nodeRead := caller(`node = "read"`)
	aclRead := caller(`acl = "read"`)
	nsTopics := []string{stream.TopicJob, stream.TopicEvaluation, stream.TopicAllocation, stream.TopicDeployment, stream.TopicService}
	aclTopics := []string{stream.TopicACLToken, stream.TopicACLPolicy, stream.TopicACLRole, stream.TopicACLAuthMethod, stream.TopicACLBindingRule}
	type row struct {
		topic, ns string
		who       string
		c         acl.Caller
		allowed   bool
	}
	var rows []row
	for _, topic := range nsTopics {
		rows = append(rows,
			row{topic, "web", "read-job in web", readJobWeb, true},
			row{topic, "api", "read-job in web", readJobWeb, false},
			row{topic, "web", "node:read", nodeRead, false},
			row{topic, "web", "acl:read", aclRead, false})
	}
	rows = append(rows,
		row{stream.TopicNode, "", "node:read", nodeRead, true},
		row{stream.TopicNode, "", "read-job in web", readJobWeb, false},
		row{stream.TopicNode, "", "acl:read", aclRead, false})
	for _, topic := range aclTopics {
		rows = append(rows,
			row{topic, "", "acl:read", aclRead, true},
			row{topic, "", "node:read", nodeRead, false},
			row{topic, "", "read-job in web", readJobWeb, false})
	}
	rows = append(rows,
		row{"NoSuchTopic", "web", "management", acl.Internal(), false},
		row{stream.TopicJob, "web", "zero Caller", acl.Caller{}, false})
	for _, r := range rows {
		e := &stream.Event{Topic: r.topic, Namespace: r.ns}
		err := mayRead(r.c, e)
		if r.allowed && err != nil {
			t.Errorf("%s event in %q, %s: refused: %v", r.topic, r.ns, r.who, err)
		}
		if !r.allowed && !acl.IsPermissionDenied(err) {
			t.Errorf("%s event in %q, %s: want a refusal, got %v", r.topic, r.ns, r.who, err)
		}
	}
}
