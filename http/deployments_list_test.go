package http_test

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/state"
)

// listWorld has five deployments in default (jobs web0..web4, oldest
// first) and two in prod.
func listWorld(t *testing.T) (*deploytest.Fixture, []*state.Deployment, []*state.Deployment) {
	t.Helper()
	f := deploytest.Start(t)
	var def, prod []*state.Deployment
	for i := range 5 {
		d, _ := f.Deploy(f.RegisterJob(deploytest.Job("default", fmt.Sprintf("web%d", i), "v0", deploytest.Group{Name: "g", Count: 1})))
		def = append(def, d)
	}
	for i := range 2 {
		d, _ := f.Deploy(f.RegisterJob(deploytest.Job("prod", fmt.Sprintf("api%d", i), "v0", deploytest.Group{Name: "g", Count: 1})))
		prod = append(prod, d)
	}
	return f, def, prod
}

func reversed(ds []*state.Deployment) []*state.Deployment {
	out := make([]*state.Deployment, len(ds))
	for i, d := range ds {
		out[len(ds)-1-i] = d
	}
	return out
}

// expectPage checks a list answer: exactly those deployments, the read
// headers, and the next token (both names; "" = absent).
func expectPage(t *testing.T, f *deploytest.Fixture, query string, want []*state.Deployment, next string) {
	t.Helper()
	resp := f.Do("GET", "/v1/deployments"+query, "")
	if want == nil {
		want = []*state.Deployment{}
	}
	expectJSON(t, resp, mustJSON(t, want))
	expectDeployMeta(t, resp, deploymentsIndex(f))
	expectHeader(t, resp, "X-Service-NextToken", next)
	expectHeader(t, resp, "X-Nomad-NextToken", next)
}

func TestDeploymentListPaging(t *testing.T) {
	f, def, prod := listWorld(t)
	all := append(append([]*state.Deployment(nil), def...), prod...)
	tok := func(d *state.Deployment) string { return fmt.Sprintf("%d.%s", d.CreateIndex, d.ID) }
	for _, c := range []struct {
		query string
		want  []*state.Deployment
		next  string
	}{
		{"", def, ""},
		{"?namespace=default", def, ""},
		{"?per_page=0", def, ""},
		{"?per_page=2", def[:2], def[2].ID},
		{"?per_page=2&next_token=" + def[2].ID, def[2:4], def[4].ID},
		{"?per_page=2&next_token=" + def[4].ID, def[4:], ""},
		{"?per_page=2&next_token=" + tok(def[2]), def[2:4], def[4].ID},
		{"?per_page=5", def, ""},
		{"?per_page=10", def, ""},
		{"?reverse=true", reversed(def), ""},
		{"?reverse=true&per_page=2", reversed(def)[:2], def[2].ID},
		{"?reverse=true&per_page=2&next_token=" + def[2].ID, []*state.Deployment{def[2], def[1]}, def[0].ID},
		{"?reverse=true&per_page=2&next_token=" + tok(def[2]), []*state.Deployment{def[2], def[1]}, def[0].ID},
		{"?reverse=yes", def, ""},
		{"?namespace=prod", prod, ""},
		{"?namespace=nothing-here", nil, ""},
		{"?namespace=*", all, ""},
		{"?namespace=*&per_page=4&next_token=" + def[3].ID, append([]*state.Deployment{def[3], def[4]}, prod...), ""},
		// A token naming a deployment that is not listed resumes nowhere.
		{"?next_token=" + otherID, nil, ""},
		// <CreateIndex>.<ID> of a gone deployment resumes at the next one.
		{fmt.Sprintf("?next_token=%d.%s", def[1].CreateIndex+1, "0"), def[2:], ""},
		{"?filter=" + url.QueryEscape(`JobID == "web3"`), def[3:4], ""},
		{"?filter=" + url.QueryEscape(`JobID != "web0"`) + "&per_page=2", def[1:3], def[3].ID},
		{"?filter=" + url.QueryEscape(`TaskGroups.g.DesiredTotal == 1 and Status == "running"`), def, ""},
		{"?filter=" + url.QueryEscape(`Namespace == "prod"`) + "&namespace=*", prod, ""},
	} {
		t.Run(c.query, func(t *testing.T) { expectPage(t, f, c.query, c.want, c.next) })
	}
}

func TestDeploymentListPrefix(t *testing.T) {
	f, def, prod := listWorld(t)
	byID := append(append([]*state.Deployment(nil), def...), prod...)
	sort.Slice(byID, func(i, j int) bool { return byID[i].ID < byID[j].ID })
	match := func(prefix, ns string) []*state.Deployment {
		var out []*state.Deployment
		for _, d := range byID {
			if strings.HasPrefix(strings.ReplaceAll(d.ID, "-", ""), strings.ToLower(strings.ReplaceAll(prefix, "-", ""))) && (ns == "*" || d.Namespace == ns) {
				out = append(out, d)
			}
		}
		return out
	}
	d := def[2]
	for _, p := range []string{d.ID[:2], d.ID[:8], d.ID[:8] + "-" + d.ID[9:11], strings.ToUpper(d.ID[:4]), d.ID} {
		t.Run(p, func(t *testing.T) {
			expectPage(t, f, "?prefix="+p, match(p, "default"), "")
			expectPage(t, f, "?namespace=*&prefix="+p, match(p, "*"), "")
		})
	}
	// Paging with a prefix is in ID order, with IDs as tokens; chosen IDs
	// make the prefix shared.
	ids := []string{"abcd0000-0000-4000-8000-000000000003", "abcd0000-0000-4000-8000-000000000001", "abcd0100-0000-4000-8000-000000000002", "abce0000-0000-4000-8000-000000000000"}
	var made []*state.Deployment
	for i, id := range ids {
		d, _ := f.DeployAs(f.RegisterJob(deploytest.Job("default", fmt.Sprintf("p%d", i), "v0", deploytest.Group{Name: "g", Count: 1})), id)
		made = append(made, d)
	}
	abcd := []*state.Deployment{made[1], made[0], made[2]}
	for _, c := range []struct {
		query string
		want  []*state.Deployment
		next  string
	}{
		{"?prefix=abcd", abcd, ""},
		{"?prefix=ab-cd", abcd, ""},
		{"?prefix=abcd00", abcd[:2], ""},
		{"?prefix=abcd&per_page=1", abcd[:1], abcd[1].ID},
		{"?prefix=abcd&per_page=1&next_token=" + abcd[1].ID, abcd[1:2], abcd[2].ID},
		{"?prefix=abcd&per_page=1&next_token=" + abcd[2].ID, abcd[2:], ""},
		{"?prefix=abcd&per_page=2&next_token=abcd0000-0000-4000-8000-000000000002", abcd[1:], ""},
		{"?prefix=abcd&per_page=2&next_token=" + fmt.Sprintf("%d.%s", abcd[1].CreateIndex, abcd[1].ID), abcd[1:], ""},
		{"?prefix=abcd&reverse=true", reversed(abcd), ""},
		{"?prefix=abcd&reverse=true&per_page=2", reversed(abcd)[:2], abcd[0].ID},
		{"?prefix=abcd&reverse=true&next_token=" + abcd[1].ID, reversed(abcd)[1:], ""},
		{"?prefix=abcd&namespace=prod", nil, ""},
	} {
		t.Run(c.query, func(t *testing.T) { expectPage(t, f, c.query, c.want, c.next) })
	}
}

func nextID(ds []*state.Deployment, i int) string {
	if i < len(ds) {
		return ds[i].ID
	}
	return ""
}

func TestDeploymentListBadInput(t *testing.T) {
	f, _, _ := listWorld(t)
	const prefixMsg = "a deployment ID prefix must have an even number of hexadecimal characters (0-9a-f), at most 32; up to 4 hyphens are ignored"
	for _, c := range []struct{ query, msg string }{
		{"?prefix=abc", `Invalid prefix "abc": ` + prefixMsg},
		{"?prefix=zz", `Invalid prefix "zz": ` + prefixMsg},
		{"?prefix=ab-c", `Invalid prefix "ab-c": ` + prefixMsg},
		{"?prefix=" + strings.Repeat("ab", 17), `Invalid prefix "` + strings.Repeat("ab", 17) + `": ` + prefixMsg},
		{"?prefix=ab-cd-ef-01-23-45", `Invalid prefix "ab-cd-ef-01-23-45": ` + prefixMsg},
		{"?per_page=abc", "Expect a non-negative number for `per_page` query string parameter"},
		{"?per_page=-1", "Expect a non-negative number for `per_page` query string parameter"},
		{"?next_token=x.y", `Invalid next_token "x.y": expected a deployment ID or <CreateIndex>.<ID>`},
		{"?namespace=no%20spaces", `Invalid namespace "no spaces": a namespace name is 1 to 64 letters, digits, '-' or '_'`},
		{"?filter=NotValid", "failed to read filter expression: 1:9 (8): no match found, expected: \"!=\", \".\", \"==\", \"[\", [ \\t\\r\\n] or [a-zA-Z0-9_/]"},
		{"?filter=" + url.QueryEscape(`InvalidField == 1`), `failed to read result page: error finding value in datum: /InvalidField at part 0: couldn't find key: struct field with name "InvalidField"`},
		{"?index=-1", "Invalid index"},
	} {
		expectError(t, f.Do("GET", "/v1/deployments"+c.query, ""), 400, c.msg)
	}
	expectError(t, f.Do("POST", "/v1/deployments", ""), 405, "method POST not allowed")
}
