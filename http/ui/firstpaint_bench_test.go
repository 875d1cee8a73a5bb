package ui_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/deployments/deploytest"
)

// BenchmarkUIFirstPaint opens the deployments page on an agent holding
// 10,000 deployments, each iteration in a new tab (a first visit: nothing
// cached) and then again in that tab (a later visit: modules revalidated),
// and reports, in milliseconds from the navigation's start, the browser's
// first contentful paint and the first page of deployments in the document
// (the page's own mark), at the median and the worst iteration:
//
//	go test -run '^$' -bench UIFirstPaint -benchtime=10x ./http/ui/
func BenchmarkUIFirstPaint(b *testing.B) {
	f := deploytest.Start(b)
	seedDeployments(b, f)
	const (
		fcp   = `(() => { const e = performance.getEntriesByName("first-contentful-paint")[0]; return e ? e.startTime : -1; })()`
		table = `(() => { const e = performance.getEntriesByName("ctlplane:deployments-rendered")[0]; return e ? e.startTime : -1; })()`
	)
	var firstFCP, firstTable, laterTable []float64
	b.ResetTimer()
	for range b.N {
		p := openTab(b, f.URL)
		p.open("/ui/", "#deployments table")
		p.waitJS("first contentful paint", fcp+` >= 0`, `document.title`, 5*time.Second)
		firstFCP = append(firstFCP, eval[float64](p, "paint timing", fcp))
		firstTable = append(firstTable, eval[float64](p, "render timing", table))
		p.open("/ui/nodes", "#nodes")
		p.open("/ui/", "#deployments table")
		laterTable = append(laterTable, eval[float64](p, "render timing", table))
		p.close()
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		xs   []float64
	}{{"first-visit-fcp", firstFCP}, {"first-visit-table", firstTable}, {"later-visit-table", laterTable}} {
		if slices.Contains(m.xs, -1) {
			b.Fatalf("%s: a page had no timing entry: %v", m.name, m.xs)
		}
		slices.Sort(m.xs)
		b.ReportMetric(m.xs[len(m.xs)/2], m.name+"-p50-ms")
		b.ReportMetric(m.xs[len(m.xs)-1], m.name+"-max-ms")
	}
	b.ReportMetric(0, "ns/op")
}
