package http_test

import (
	"sort"
	"testing"
)

// TestListEmpty: an empty table is [] (never null) at index 1.
func TestListEmpty(t *testing.T) {
	ts := start(t)
	for _, path := range []string{rulesPath, rulesPath + "?ns=*", rulesPath + "?authmethod=minikube", rulesPath + "?ns=team-a"} {
		t.Run(path, func(t *testing.T) {
			resp := ts.Do(t, "GET", path, "")
			expectJSON(t, resp, "[]")
			expectMeta(t, resp, 1)
		})
	}
}

// TestList walks GET /v1/acl/binding-rules: order, the Selector key,
// the authmethod filter and the namespace parameter.
func TestList(t *testing.T) {
	ts := start(t)
	var (
		mk1   = create(t, ts, `{"AuthMethod":"minikube","BindType":"service","BindName":"web"}`)
		mk2   = create(t, ts, `{"Description":"with selector","AuthMethod":"minikube","Selector":"serviceaccount.name==api","BindType":"service","BindName":"api"}`)
		mkUp  = create(t, ts, `{"AuthMethod":"Minikube","BindType":"node","BindName":"n1"}`)
		other = create(t, ts, `{"AuthMethod":"other","BindType":"role","BindName":"Admins"}`)
		mk3   = create(t, ts, `{"AuthMethod":"minikube","BindType":"service","BindName":"db"}`)
		aMk   = create(t, ts, `{"AuthMethod":"minikube","BindType":"service","BindName":"web","Namespace":"team-a"}`)
		aOth  = create(t, ts, `{"AuthMethod":"other","Selector":"a==b","BindType":"service","BindName":"web","Namespace":"team-a"}`)
		bMk   = create(t, ts, `{"AuthMethod":"minikube","BindType":"service","BindName":"web","Namespace":"team-b"}`)
	)
	index := bMk.ModifyIndex

	byID := func(rules ...rule) []rule {
		sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
		return rules
	}
	tests := []struct {
		name    string
		query   string
		headers []string
		want    []rule
	}{
		{name: "default namespace, ascending by ID", want: byID(mk1, mk2, mkUp, other, mk3)},
		{name: "authmethod filter is exact", query: "?authmethod=minikube", want: byID(mk1, mk2, mk3)},
		{name: "authmethod filter is case-sensitive", query: "?authmethod=Minikube", want: byID(mkUp)},
		{name: "authmethod with no rules", query: "?authmethod=nope", want: nil},
		{name: "authmethod prefix does not match", query: "?authmethod=mini", want: nil},
		{name: "empty authmethod lists all", query: "?authmethod=", want: byID(mk1, mk2, mkUp, other, mk3)},
		{name: "ns query", query: "?ns=team-a", want: byID(aMk, aOth)},
		{name: "header", headers: []string{"X-Service-Namespace", "team-b"}, want: byID(bMk)},
		{name: "ns beats header", query: "?ns=team-a", headers: []string{"X-Service-Namespace", "team-b"}, want: byID(aMk, aOth)},
		{name: "explicit default", query: "?ns=default", want: byID(mk1, mk2, mkUp, other, mk3)},
		{name: "namespace with no rules", query: "?ns=team-z", want: nil},
		{name: "ns=* lists every namespace", query: "?ns=*", want: byID(mk1, mk2, mkUp, other, mk3, aMk, aOth, bMk)},
		{name: "header * lists every namespace", headers: []string{"X-Service-Namespace", "*"}, want: byID(mk1, mk2, mkUp, other, mk3, aMk, aOth, bMk)},
		{name: "ns=* with authmethod", query: "?ns=*&authmethod=minikube", want: byID(mk1, mk2, mk3, aMk, bMk)},
		{name: "ns with authmethod", query: "?ns=team-a&authmethod=other", want: byID(aOth)},
		{name: "stale", query: "?stale", want: byID(mk1, mk2, mkUp, other, mk3)},
		{name: "consistent", query: "?consistent", want: byID(mk1, mk2, mkUp, other, mk3)},
		{name: "index=0 answers at once", query: "?index=0", want: byID(mk1, mk2, mkUp, other, mk3)},
		{name: "index below the table's answers at once", query: "?index=1&wait=30s", want: byID(mk1, mk2, mkUp, other, mk3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.Do(t, "GET", rulesPath+tc.query, "", tc.headers...)
			expectJSON(t, resp, listBody(tc.want...))
			// The index is the table's, whatever the filter.
			expectMeta(t, resp, index)
		})
	}

	t.Run("Selector key absent when empty, present when set", func(t *testing.T) {
		resp := ts.Do(t, "GET", rulesPath+"?ns=team-a", "")
		var entries []map[string]any
		resp.JSON(t, &entries)
		for _, e := range entries {
			_, has := e["Selector"]
			switch e["ID"] {
			case aMk.ID:
				if has {
					t.Errorf("entry with an empty Selector has the key: %v", e)
				}
			case aOth.ID:
				if e["Selector"] != "a==b" {
					t.Errorf("entry with a Selector: %v", e)
				}
			}
			for _, k := range []string{"ID", "Description", "AuthMethod", "BindType", "BindName", "Namespace", "CreateIndex", "ModifyIndex"} {
				if _, ok := e[k]; !ok {
					t.Errorf("entry lacks %s: %v", k, e)
				}
			}
		}
	})
	t.Run("?pretty", func(t *testing.T) {
		resp := ts.Do(t, "GET", rulesPath+"?ns=team-b&pretty", "")
		want := "[\n" +
			"    {\n" +
			`        "ID": "` + bMk.ID + "\",\n" +
			`        "Description": "",` + "\n" +
			`        "AuthMethod": "minikube",` + "\n" +
			`        "BindType": "service",` + "\n" +
			`        "BindName": "web",` + "\n" +
			`        "Namespace": "team-b",` + "\n" +
			`        "CreateIndex": ` + u(bMk.CreateIndex) + ",\n" +
			`        "ModifyIndex": ` + u(bMk.ModifyIndex) + "\n" +
			"    }\n" +
			"]\n"
		expectJSON(t, resp, want)
	})
	t.Run("deleting the last rule of a filter gives [] at the delete's index", func(t *testing.T) {
		expectJSON(t, ts.Do(t, "DELETE", ruleURL(bMk.ID, "?ns=team-b"), ""), "true")
		resp := ts.Do(t, "GET", rulesPath+"?ns=team-b", "")
		expectJSON(t, resp, "[]")
		if got := indexOf(t, resp); got <= index {
			t.Errorf("index after delete: %d, want above %d", got, index)
		}
	})
	t.Run("invalid namespace", func(t *testing.T) {
		expectError(t, ts.Do(t, "GET", rulesPath+"?ns=a.b", ""), 400, `Invalid namespace "a.b": a namespace name is 1 to 64 letters, digits, '-' or '_'`)
	})
}
