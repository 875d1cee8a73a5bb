package acl

import (
	"encoding/json"
	"sort"

	"github.com/ctlplane/ctlplane/server/acl/bindrule"
)

// Field caps (README, Security). Every write is replicated to every server
// and kept in every snapshot, and login copies Meta into the token it
// mints, so nothing a client sends is stored unbounded. Names keep
// Consul's 128; Consul has no cap on descriptions and Nomad's 256 would
// refuse descriptions Consul users already have, so they get 8 KiB.
const (
	MaxNameLength           = 128
	MaxDisplayNameLength    = 256
	MaxDescriptionLength    = 8 << 10
	MaxPolicyRulesLength    = 64 << 10
	MaxPolicyRulesNesting   = 32
	MaxAuthMethodConfigSize = 64 << 10
	MaxLoginMetaPairs       = 32
	MaxLoginMetaKeyLength   = 128
	MaxLoginMetaValueLength = 512
)

// tooLong is the 400 for a field over its cap; object prefixes it as the
// other messages about that object are ("Invalid Policy").
func tooLong(object, field string, n, limit int) error {
	return invalid("%s: %s is too long: %d bytes; the limit is %d", object, field, n, limit)
}

// checkLen refuses s when it is longer than limit.
func checkLen(object, field, s string, limit int) error {
	if len(s) > limit {
		return tooLong(object, field, len(s), limit)
	}
	return nil
}

// checkNameAndDescription applies the caps every ACL object shares.
func checkNameAndDescription(object, name, description string) error {
	if err := checkLen(object, "Name", name, MaxNameLength); err != nil {
		return err
	}
	return checkLen(object, "Description", description, MaxDescriptionLength)
}

// checkPolicyRules bounds a policy's rules text before the HCL parser,
// whose cost grows with nesting, sees it.
func checkPolicyRules(rules string) error {
	if err := checkLen("Invalid Policy", "Rules", rules, MaxPolicyRulesLength); err != nil {
		return err
	}
	if d := bindrule.NestingDepth(rules, false); d > MaxPolicyRulesNesting {
		return invalid("Invalid Policy: Rules nest braces or brackets %d levels deep; the limit is %d", d, MaxPolicyRulesNesting)
	}
	return nil
}

// checkAuthMethodConfig bounds a method's Config by its JSON size, the
// form it is stored and replicated in.
func checkAuthMethodConfig(cfg map[string]any) error {
	buf, err := json.Marshal(cfg)
	if err != nil {
		return invalid("Invalid Auth Method: Config cannot be encoded: %v", err)
	}
	if len(buf) > MaxAuthMethodConfigSize {
		return invalid("Invalid Auth Method: Config is too large: %d bytes of JSON; the limit is %d", len(buf), MaxAuthMethodConfigSize)
	}
	return nil
}

// checkLoginMeta bounds a login's Meta, which becomes part of the minted
// token's Description.
func checkLoginMeta(meta map[string]string) error {
	if len(meta) > MaxLoginMetaPairs {
		return invalid("Invalid Meta: %d pairs; the limit is %d", len(meta), MaxLoginMetaPairs)
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same message for the same body
	for _, k := range keys {
		if len(k) > MaxLoginMetaKeyLength {
			return invalid("Invalid Meta: a key is too long: %d bytes; the limit is %d", len(k), MaxLoginMetaKeyLength)
		}
		if v := meta[k]; len(v) > MaxLoginMetaValueLength {
			return invalid("Invalid Meta: the value of %q is too long: %d bytes; the limit is %d", k, len(v), MaxLoginMetaValueLength)
		}
	}
	return nil
}

// loginDescription is the Description of a token minted by login: Meta as
// JSON after upstream's text, within the description cap (escaping can
// make the JSON longer than the pairs the Meta caps allow).
func loginDescription(meta map[string]string) (string, error) {
	desc := "token created via login"
	if len(meta) == 0 {
		return desc, nil
	}
	buf, err := json.Marshal(meta)
	if err != nil {
		return "", err
	}
	desc += ": " + string(buf)
	if len(desc) > MaxDescriptionLength {
		return "", invalid("Invalid Meta: the token Description it makes is %d bytes; the limit is %d", len(desc), MaxDescriptionLength)
	}
	return desc, nil
}
