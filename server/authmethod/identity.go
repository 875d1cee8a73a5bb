package authmethod

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Identity is what a validated bearer token stands for: value.<target> for
// each ClaimMappings target and list.<target> for each ListClaimMappings
// target. Every mapped target is present, empty when the token lacks it.
type Identity struct {
	Values map[string]string
	Lists  map[string][]string
}

// BlankIdentity is the identity with every field of the method present and
// empty: what binding rules are validated against.
func (c *Config) BlankIdentity() *Identity {
	id := &Identity{Values: map[string]string{}, Lists: map[string][]string{}}
	for _, t := range c.ClaimMappings {
		id.Values[t] = ""
	}
	for _, t := range c.ListClaimMappings {
		id.Lists[t] = []string{}
	}
	return id
}

// SelectableData is the identity as go-bexpr selectors see it:
// {"value": {target: string}, "list": {target: [string]}}.
func (id *Identity) SelectableData() map[string]any {
	return map[string]any{"value": id.Values, "list": id.Lists}
}

// ProjectedVars are the variables a BindName may interpolate: value.<target>.
// List fields are not interpolatable (as upstream).
func (id *Identity) ProjectedVars() map[string]string {
	out := make(map[string]string, len(id.Values))
	for k, v := range id.Values {
		out["value."+k] = v
	}
	return out
}

// Fields is the identity as a flat map of field path to value (a string for
// value.<t>, a list of strings for list.<t>), for display.
func (id *Identity) Fields() map[string]any {
	out := make(map[string]any, len(id.Values)+len(id.Lists))
	for k, v := range id.Values {
		out["value."+k] = v
	}
	for k, v := range id.Lists {
		if v == nil {
			v = []string{}
		}
		out["list."+k] = v
	}
	return out
}

// IdentityFromFields builds an identity from field path to value, as the
// explain endpoint takes it: only the method's fields, strings for value.<t>
// and lists of strings for list.<t>. Fields not given are empty.
func (c *Config) IdentityFromFields(fields map[string]any) (*Identity, error) {
	id := c.BlankIdentity()
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		val := fields[name]
		if t, ok := strings.CutPrefix(name, "value."); ok {
			if _, known := id.Values[t]; known {
				s, isString := val.(string)
				if !isString {
					return nil, fmt.Errorf("identity field %q must be a string, not %s", name, describe(val))
				}
				id.Values[t] = s
				continue
			}
		}
		if t, ok := strings.CutPrefix(name, "list."); ok {
			if _, known := id.Lists[t]; known {
				list, err := stringList(name, val)
				if err != nil {
					return nil, fmt.Errorf("identity field %q must be a list of strings, not %s", name, describe(val))
				}
				id.Lists[t] = list
				continue
			}
		}
		known := c.IdentityFields()
		if len(known) == 0 {
			return nil, fmt.Errorf("unknown identity field %q: the auth method maps no claims", name)
		}
		return nil, fmt.Errorf("unknown identity field %q: the auth method's fields are %s", name, strings.Join(known, ", "))
	}
	return id, nil
}

// identityFromClaims maps a token's claims through the method's mappings,
// with upstream's conversions: strings as they are, booleans as true/false,
// numbers truncated to integer text; a list claim may be a single value,
// and its empty strings are dropped.
func (c *Config) identityFromClaims(claims map[string]any) (*Identity, error) {
	id := c.BlankIdentity()
	for _, claim := range sortedKeys(c.ClaimMappings) {
		val := getClaim(claims, claim)
		if val == nil {
			continue
		}
		s, ok := stringifyClaim(val)
		if !ok {
			return nil, fmt.Errorf("error converting claim '%s' to string from unknown type %T", claim, val)
		}
		id.Values[c.ClaimMappings[claim]] = s
	}
	for _, claim := range sortedKeys(c.ListClaimMappings) {
		raw := getClaim(claims, claim)
		if raw == nil {
			continue
		}
		var items []any
		switch v := raw.(type) {
		case []any:
			items = v
		case string, bool, json.Number:
			items = []any{v}
		default:
			return nil, fmt.Errorf("%q list claim could not be converted to string list", claim)
		}
		list := make([]string, 0, len(items))
		for _, item := range items {
			s, ok := stringifyClaim(item)
			if !ok {
				return nil, fmt.Errorf("value %v in %q list claim could not be parsed as string", item, claim)
			}
			if s != "" {
				list = append(list, s)
			}
		}
		id.Lists[c.ListClaimMappings[claim]] = list
	}
	return id, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// getClaim finds a claim by name, or by JSON pointer when the name starts
// with "/". A missing claim is nil.
func getClaim(claims map[string]any, name string) any {
	if !strings.HasPrefix(name, "/") {
		return claims[name]
	}
	var cur any = claims
	for _, part := range strings.Split(name[1:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[part]
			if !ok {
				return nil
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

// stringifyClaim converts a claim value to a string; ok is false for
// objects, lists and other types. Claims are decoded with UseNumber, so
// numbers arrive as json.Number and are truncated to integers.
func stringifyClaim(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return strconv.FormatInt(i, 10), true
		}
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return v.String(), true
		}
		t := math.Trunc(f)
		if t == 0 {
			t = 0 // no "-0"
		}
		return strconv.FormatFloat(t, 'f', 0, 64), true
	case nil:
		return "", true
	}
	return "", false
}
