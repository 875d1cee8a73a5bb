package stream

import (
	"fmt"
	"strings"
)

// Filter selects events by topic and key and by namespace, as Nomad's
// subscription request does.
type Filter struct {
	// Topics maps a topic (or "*") to the keys wanted ("*" for all); a key
	// matches an event's Key or any of its FilterKeys.
	Topics map[string][]string
	// Namespace keeps events of that namespace ("*": all); events of no
	// namespace (nodes, ACL objects) always pass.
	Namespace string
}

// ParseTopics reads `topic=Topic:Key` query values; a topic without a key
// means every key, and no value at all means every topic.
func ParseTopics(values []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(values) == 0 {
		out[TopicAll] = []string{"*"}
		return out, nil
	}
	for _, v := range values {
		topic, key, found := strings.Cut(v, ":")
		if topic == "" {
			return nil, fmt.Errorf("Invalid topic query %q: it must be Topic or Topic:Key", v)
		}
		if !found || key == "" {
			key = "*"
		}
		if !knownTopic(topic) {
			return nil, fmt.Errorf("Invalid topic %q: it must be one of %s or *", topic, strings.Join(Topics(), ", "))
		}
		out[topic] = append(out[topic], key)
	}
	return out, nil
}

// Topics lists the topics served.
func Topics() []string {
	return []string{TopicDeployment, TopicEvaluation, TopicAllocation, TopicJob, TopicNode, TopicService,
		TopicACLToken, TopicACLPolicy, TopicACLRole, TopicACLAuthMethod, TopicACLBindingRule}
}

func knownTopic(t string) bool {
	if t == TopicAll {
		return true
	}
	for _, k := range Topics() {
		if k == t {
			return true
		}
	}
	return false
}

// Match says whether the filter keeps e.
func (f *Filter) Match(e *Event) bool {
	if f.Namespace != "*" && e.Namespace != "" && e.Namespace != f.Namespace {
		return false
	}
	return matchKeys(f.Topics[e.Topic], e) || matchKeys(f.Topics[TopicAll], e)
}

func matchKeys(keys []string, e *Event) bool {
	for _, k := range keys {
		if k == "*" || k == e.Key {
			return true
		}
		for _, fk := range e.FilterKeys {
			if k == fk {
				return true
			}
		}
	}
	return false
}
