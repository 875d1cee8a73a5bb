package http_test

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// BenchmarkDeploymentListPage: GET /v1/deployments, a page of 100 out of
// 10,000 deployments (one job of one allocation each, in default), over
// loopback HTTP: the first page, a page from a next_token half way, the
// same reversed, and namespace=*.
func BenchmarkDeploymentListPage(b *testing.B) {
	const n = 10000
	f := deploytest.Start(b)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 8 { // Raft batches concurrent applies
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				f.Deploy(f.RegisterJob(deploytest.Job("default", fmt.Sprintf("web%d", i), "v0", deploytest.Group{Name: "g", Count: 1})))
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	_, all, err := f.Server.State().Deployments(memdb.NewWatchSet(), state.AllNamespaces, "")
	if err != nil || len(all) != n {
		b.Fatalf("%d deployments, %v", len(all), err)
	}
	mid := all[n/2]
	for _, c := range []struct{ name, query string }{
		{"first", "?per_page=100"},
		{"token", "?per_page=100&next_token=" + mid.ID},
		{"reverse-token", fmt.Sprintf("?per_page=100&reverse=true&next_token=%d.%s", mid.CreateIndex, mid.ID)},
		{"all-namespaces", "?per_page=100&namespace=*"},
	} {
		b.Run(c.name, func(b *testing.B) {
			url := f.URL + "/v1/deployments" + c.query
			for b.Loop() {
				resp, err := http.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Service-NextToken") == "" {
					b.Fatalf("%d, next token %q", resp.StatusCode, resp.Header.Get("X-Service-NextToken"))
				}
			}
		})
	}
}
