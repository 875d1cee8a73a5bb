package agent_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// BenchmarkEventStreamFanout: with a buffer of 1,000 entries, 1,000
// subscribers (a token with acl:read, topic=ACLBindingRule) while binding rules are created at 1,000/s; each
// iteration is one write. Reports the delivery latency from the write
// request being sent to its event being read by a subscriber (so it
// includes the write's own commit), the write latency alone, and the
// fan-out spread: how long after the first subscriber the others read it
// (timed on one subscriber in ten; every subscriber counts what it got).
//
//	go test -run '^$' -bench BenchmarkEventStreamFanout -benchtime=5000x ./server/agent/
func BenchmarkEventStreamFanout(b *testing.B) {
	// The same writes without subscribers are the reference.
	for _, n := range []int{0, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) { fanout(b, n) })
	}
}

func fanout(b *testing.B, subscribers int) {
	const rate = 1000 // writes per second
	// A buffer of 1 s of entries at this rate.
	ts := servertest.Start(b, servertest.ACL(eventMgmt), eventConfig(1000, 0),
		func(c *server.Config) { c.HTTPMaxConnsPerClient = 0 })
	do := func(method, path, body string) *servertest.Response {
		r := ts.Do(b, method, path, body, "X-Service-Token", eventMgmt)
		if r.Status != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r
	}
	do("PUT", "/v1/acl/auth-method", `{"Name":"m","Type":"jwt","Config":{"JWKSURL":"https://keys.example/jwks"}}`)
	var pol state.ACLPolicy
	do("PUT", "/v1/acl/policy", `{"Name":"acl-read","Rules":"acl = \"read\""}`).JSON(b, &pol)
	var tok state.ACLToken
	do("PUT", "/v1/acl/token", fmt.Sprintf(`{"Policies":[{"ID":%q}]}`, pol.ID)).JSON(b, &tok)

	tr := &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 0}
	hc := &http.Client{Transport: tr}
	type recv struct {
		key string
		at  time.Time
	}
	got := make([][]recv, subscribers)
	// Every subscriber counts its events; one in sampleEvery also times them.
	const sampleEvery = 10
	counts := make([]int, subscribers)
	var cutMu sync.Mutex
	cut, cutMsg := 0, ""
	var ready, done sync.WaitGroup
	bodies := make([]io.ReadCloser, subscribers)
	for i := 0; i < subscribers; i++ {
		req, _ := http.NewRequest("GET", ts.URL+"/v1/event/stream?topic=ACLBindingRule", nil)
		req.Header.Set("X-Nomad-Token", tok.SecretID)
		resp, err := hc.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("subscriber %d: %v %v", i, err, resp)
		}
		bodies[i] = resp.Body
		ready.Add(1)
		done.Add(1)
		go func(i int, body io.Reader) {
			defer done.Done()
			ready.Done()
			br := bufio.NewReaderSize(body, 64<<10)
			keyTag := []byte(`"Key":"`)
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if bytes.HasPrefix(line, []byte(`{"Error"`)) {
					cutMu.Lock()
					cut++
					cutMsg = string(line)
					cutMu.Unlock()
					return
				}
				if i%sampleEvery != 0 {
					counts[i] += bytes.Count(line, keyTag) // the benchmark's own cost kept low
					continue
				}
				now := time.Now()
				for {
					j := bytes.Index(line, keyTag)
					if j < 0 {
						break
					}
					line = line[j+len(keyTag):]
					k := bytes.IndexByte(line, '"')
					got[i] = append(got[i], recv{string(line[:k]), now})
				}
			}
		}(i, resp.Body)
	}
	ready.Wait()

	sent := make(map[string]time.Time, b.N)
	writeLat := make([]time.Duration, 0, b.N)
	var mu sync.Mutex
	var wg sync.WaitGroup
	b.ResetTimer()
	tick := time.NewTicker(time.Second / rate)
	for n := 0; n < b.N; n++ {
		<-tick.C
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			start := time.Now()
			req, _ := http.NewRequest("PUT", ts.URL+"/v1/acl/binding-rule",
				strings.NewReader(fmt.Sprintf(`{"AuthMethod":"m","BindType":"service","BindName":"svc%d"}`, n)))
			req.Header.Set("X-Service-Token", eventMgmt)
			resp, err := hc.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("write: %d %s", resp.StatusCode, buf.String())
				return
			}
			id := buf.String()
			id = id[strings.Index(id, `"ID":"`)+6:]
			id = id[:strings.IndexByte(id, '"')]
			mu.Lock()
			sent[id] = start
			writeLat = append(writeLat, time.Since(start))
			mu.Unlock()
		}(n)
	}
	tick.Stop()
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // the last deliveries
	b.StopTimer()
	for _, body := range bodies {
		body.Close()
	}
	done.Wait()

	// The spread: how long after the first subscriber the others got it.
	first := map[string]time.Time{}
	for i := range got {
		for _, r := range got[i] {
			if f, ok := first[r.key]; !ok || r.at.Before(f) {
				first[r.key] = r.at
			}
		}
	}
	var spread []time.Duration
	for i := range got {
		for _, r := range got[i] {
			spread = append(spread, r.at.Sub(first[r.key]))
		}
	}
	var lat []time.Duration
	missing := 0
	for i := range got {
		seen := map[string]bool{}
		for _, r := range got[i] {
			if s, ok := sent[r.key]; ok {
				lat = append(lat, r.at.Sub(s))
				seen[r.key] = true
			}
		}
		if i%sampleEvery == 0 {
			missing += len(sent) - len(seen)
		} else {
			missing += len(sent) - counts[i]
		}
	}
	if subscribers > 0 && (missing > 0 || cut > 0) {
		b.Errorf("%d deliveries missing of %d; %d subscribers cut off (%s)", missing, len(sent)*subscribers, cut, cutMsg)
	}
	pct := func(d []time.Duration, p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[int(float64(len(d)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(lat, 0.50), "deliver-p50-ms")
	b.ReportMetric(pct(lat, 0.99), "deliver-p99-ms")
	b.ReportMetric(pct(writeLat, 0.99), "write-p99-ms")
	b.ReportMetric(pct(spread, 0.99), "spread-p99-ms")
	b.ReportMetric(float64(len(lat)), "deliveries")
	b.ReportMetric(float64(ts.EventBuffer().Size()), "buffer-batches")
}
