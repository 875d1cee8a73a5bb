package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// Service checks of native services (Nomad's client/serviceregistration/
// checks): the client probes each check of a running allocation every
// Interval against the host address and port of its label, keeps the
// latest result, reports it to the servers when its status (or HTTP
// status code) changes, counts
// the results into the allocation's deployment health (health_check =
// "checks") and restarts a task after check_restart's Limit consecutive
// failures past its Grace.

// checkOutputLimit is Nomad's cap on an HTTP check's recorded output.
const checkOutputLimit = 3 * 1024

// checkHTTP is the client of HTTP checks: no pooled connections (a check
// must see the task's listener as a new client would), no proxy, and
// redirects followed only on the checked host and port.
var checkHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}, CheckRedirect: sameHostRedirect}

// maxCheckRedirects is how many redirects a check follows (Go's default).
const maxCheckRedirects = 10

// sameHostRedirect follows a redirect that stays on the checked host and
// port; one elsewhere is not followed and the redirect is the result (a
// 3xx passes, as in Nomad): a task must not make the client agent call
// another address (another node's API, a cloud metadata service) and
// record its answer.
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxCheckRedirects {
		return fmt.Errorf("stopped after %d redirects", maxCheckRedirects)
	}
	if hostPort(req.URL) != hostPort(via[0].URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// hostPort is u's host and port, the scheme's port when it names none.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// checkRunner runs one check of an allocation. Its fields are the
// client's lock's, except def, ids and addr, which never change.
type checkRunner struct {
	ar      *allocRunner
	def     *api.ServiceCheck
	id      string
	group   string
	task    string
	service string
	addr    string // host:port; "" when the port label is unknown
	addrErr string

	gen      uint64
	timer    Timer
	result   *api.CheckResult
	failures int
}

// checkID is Nomad's NomadCheckID: a hash of the allocation, the group
// and the check's identity.
func checkID(allocID, group string, c *api.ServiceCheck) string {
	h := md5.New()
	for _, s := range []string{allocID, group, c.TaskName, c.Name, c.Type, c.PortLabel, c.Path, c.Method,
		c.Interval.String(), c.Timeout.String()} {
		_, _ = io.WriteString(h, s)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// startChecks starts the allocation's checks (once, while it runs).
func (ar *allocRunner) startChecks() {
	if ar.checks != nil || ar.stopping {
		return
	}
	ar.checks = []*checkRunner{}
	add := func(task string, svc *api.Service) {
		for _, c := range svc.Checks {
			cr := &checkRunner{ar: ar, def: c, id: checkID(ar.alloc.ID, ar.group.Name, c), group: ar.group.Name,
				task: c.TaskName, service: svc.Name}
			if cr.task == "" {
				cr.task = task
			}
			label := c.PortLabel
			if label == "" {
				label = svc.PortLabel
			}
			for _, p := range ar.alloc.AllocatedPorts {
				if p.Label == label {
					cr.addr = net.JoinHostPort(p.HostIP, strconv.Itoa(p.Value))
				}
			}
			if cr.addr == "" {
				cr.addrErr = fmt.Sprintf("invalid port %q: port label not found", label)
			}
			ar.checks = append(ar.checks, cr)
			cr.schedule(0)
		}
	}
	for _, svc := range ar.group.Services {
		add("", svc)
	}
	for _, t := range ar.group.Tasks {
		for _, svc := range t.Services {
			add(t.Name, svc)
		}
	}
}

// stopChecks stops every check; their results are kept.
func (ar *allocRunner) stopChecks() {
	for _, cr := range ar.checks {
		cr.gen++
		if cr.timer != nil {
			cr.timer.Stop()
			cr.timer = nil
		}
	}
}

// resetChecks forgets the checks (a new group definition): the next
// change starts the new ones.
func (ar *allocRunner) resetChecks() {
	ar.stopChecks()
	ar.checks = nil
	ar.checkResults = nil
}

// healthChecks counts the checks that decide health (not on_update =
// "ignore") and whether all of them pass.
func (ar *allocRunner) healthChecks() (n int, passing bool) {
	passing = true
	for _, cr := range ar.checks {
		if cr.def.OnUpdate == api.OnUpdateIgnore {
			continue
		}
		n++
		if cr.result == nil || cr.result.Status != api.CheckStatusSuccess {
			passing = false
		}
	}
	return n, passing
}

// groupHasChecks says whether any service of the group has a check.
func groupHasChecks(tg *api.TaskGroup) bool {
	for _, s := range tg.Services {
		if len(s.Checks) > 0 {
			return true
		}
	}
	for _, t := range tg.Tasks {
		for _, s := range t.Services {
			if len(s.Checks) > 0 {
				return true
			}
		}
	}
	return false
}

// schedule probes the check after d, off the lock, then records the result.
func (cr *checkRunner) schedule(d time.Duration) {
	gen := cr.gen
	c := cr.ar.c
	cr.timer = c.clock.AfterFunc(d, func() {
		res := cr.probe()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || gen != cr.gen {
			return
		}
		cr.record(res)
		cr.schedule(cr.def.Interval)
	})
}

// probe runs the check once (Nomad's checker.Do).
func (cr *checkRunner) probe() *api.CheckResult {
	c := cr.def
	mode := api.CheckModeHealthiness
	if c.OnUpdate == api.OnUpdateIgnore {
		mode = api.CheckModeReadiness
	}
	res := &api.CheckResult{ID: cr.id, Check: c.Name, Group: cr.group, Task: cr.task, Service: cr.service,
		Mode: mode, Status: api.CheckStatusPending, Timestamp: time.Now().UTC().Unix()}
	if cr.addr == "" {
		res.Status, res.Output = api.CheckStatusFailure, cr.addrErr
		return res
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if c.Type != "http" {
		conn, err := new(net.Dialer).DialContext(ctx, "tcp", cr.addr)
		if err != nil {
			res.Status, res.Output = api.CheckStatusFailure, err.Error()
			return res
		}
		_ = conn.Close()
		res.Status, res.Output = api.CheckStatusSuccess, "nomad: tcp ok"
		return res
	}
	scheme := c.Protocol
	if scheme == "" {
		scheme = "http"
	}
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	path, query, _ := strings.Cut(c.Path, "?")
	u := (&url.URL{Scheme: scheme, Host: cr.addr, Path: path, RawQuery: query}).String()
	req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(c.Body))
	if err != nil {
		res.Status, res.Output = api.CheckStatusFailure, "nomad: "+err.Error()
		return res
	}
	keys := make([]string, 0, len(c.Header))
	for k := range c.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range c.Header[k] {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "Nomad/ctlplane")
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := checkHTTP.Do(req)
	if err != nil {
		res.Status, res.Output = api.CheckStatusFailure, "nomad: "+err.Error()
		return res
	}
	defer resp.Body.Close()
	res.StatusCode = resp.StatusCode
	switch {
	case resp.StatusCode == http.StatusOK:
		res.Status, res.Output = api.CheckStatusSuccess, "nomad: http ok"
		return res
	case resp.StatusCode < 400:
		res.Status = api.CheckStatusSuccess
	default:
		res.Status = api.CheckStatusFailure
	}
	var out bytes.Buffer
	if _, err := io.Copy(&out, io.LimitReader(resp.Body, checkOutputLimit)); err != nil {
		res.Output = "nomad: " + err.Error()
	} else {
		res.Output = out.String()
	}
	return res
}

// record keeps a result: a change of status is reported (and may change
// the allocation's health); check_restart counts the failures.
func (cr *checkRunner) record(res *api.CheckResult) {
	ar := cr.ar
	prev := cr.result
	cr.result = res
	if ar.checkResults == nil {
		ar.checkResults = map[string]*api.CheckResult{}
	}
	// Reported when it says something new: Raft is not written at every
	// interval of every check.
	changed := prev == nil || prev.Status != res.Status || prev.StatusCode != res.StatusCode
	if changed {
		ar.checkResults[cr.id] = res
	}
	cr.checkRestart(res)
	if changed {
		ar.changed()
	}
}

// checkRestart restarts the check's task (every task, for a group check
// without one) after Limit consecutive failures once Grace has passed
// since it (re)started.
func (cr *checkRunner) checkRestart(res *api.CheckResult) {
	rs := cr.def.CheckRestart
	if rs == nil || rs.Limit <= 0 {
		return
	}
	if res.Status != api.CheckStatusFailure {
		cr.failures = 0
		return
	}
	var tasks []*taskRunner
	started := time.Time{}
	for _, tr := range cr.ar.tasks {
		if cr.task != "" && tr.task.Name != cr.task {
			continue
		}
		tasks = append(tasks, tr)
		for _, t := range []time.Time{tr.st.StartedAt, tr.st.LastRestart} {
			if t.After(started) {
				started = t
			}
		}
	}
	if cr.ar.c.clock.Now().Sub(started) < rs.Grace {
		return
	}
	cr.failures++
	if cr.failures < rs.Limit {
		return
	}
	cr.failures = 0
	reason := fmt.Sprintf("healthcheck: check %q unhealthy", cr.def.Name)
	for _, tr := range tasks {
		if err := tr.restart(reason); err != nil {
			cr.ar.c.logger.Warn("check_restart could not restart a task", "alloc", cr.ar.alloc.ID, "task", tr.task.Name, "error", err)
		}
	}
	cr.ar.changed()
}
