package http

import (
	"context"
	"errors"

	metrics "github.com/armon/go-metrics"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// Blocking-query limits.
const (
	defaultQueryWait = 5 * time.Minute
	maxQueryWait     = 10 * time.Minute
	// A random extra of up to wait/jitterFraction spreads out the wake-ups
	// of clients that all started waiting at once.
	jitterFraction = 16
)

// queryOptions are the read parameters common to every read endpoint.
type queryOptions struct {
	minIndex   uint64
	wait       time.Duration
	stale      bool
	consistent bool
}

// queryMeta is what a read reports in its response headers.
type queryMeta struct {
	index       uint64
	knownLeader bool
	lastContact time.Duration
}

func parseQueryOptions(r *http.Request) (queryOptions, error) {
	q := r.URL.RawQuery
	var opts queryOptions
	opts.stale = queryHas(q, "stale")
	opts.consistent = queryHas(q, "consistent")
	if opts.stale && opts.consistent {
		return opts, badRequest("Cannot specify ?stale with ?consistent, conflicting semantics.")
	}
	if v, _ := queryLookup(q, "index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return opts, badRequest("Invalid index")
		}
		opts.minIndex = idx
	}
	if v, _ := queryLookup(q, "wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return opts, badRequest("Invalid wait time")
		}
		opts.wait = d
	}
	return opts, nil
}

// queryFunc reads from one store, adds what it depends on to ws, and returns
// the index of the tables it read.
type queryFunc func(ws memdb.WatchSet, s *state.Store) (uint64, error)

// blockingQuery answers a read: at once when no index is given, otherwise as
// soon as the result's index passes it, or with the current result when the
// wait ends (or the client goes away, or the server shuts down). fn keeps its
// result in its closure; the last call's result is the answer.
func (h *Handler) blockingQuery(r *http.Request, opts queryOptions, fn queryFunc) (queryMeta, error) {
	var meta queryMeta
	if !opts.stale {
		if err := h.backend.CheckRead(opts.consistent); err != nil {
			return meta, err
		}
	}
	var timeout <-chan struct{}
	if opts.minIndex > 0 {
		wait := opts.wait
		if wait <= 0 {
			wait = defaultQueryWait
		}
		wait = min(wait, maxQueryWait)
		wait += rand.N(wait/jitterFraction + 1)
		timeout = h.deadlines.after(wait)
	}
	// Only a read that may have to wait fills a watch set: not one that
	// will not block, nor the read after a wake-up or a timeout, which is
	// most likely the answer (when it is not, the query reads again,
	// watching, before it waits).
	watch := opts.minIndex > 0
	for abandoned, timedOut := false, false; ; {
		s := h.backend.State()
		var ws memdb.WatchSet
		if watch {
			ws = memdb.NewWatchSet()
			ws.Add(s.AbandonCh())
		}
		idx, err := fn(ws, s)
		if err != nil {
			return meta, err
		}
		meta.index = max(idx, 1)
		// After a snapshot restore the index may have gone back: answer
		// then too, so that the client sees the restored state.
		if opts.minIndex == 0 || idx > opts.minIndex || abandoned || timedOut {
			break
		}
		if !watch {
			watch = true
			continue
		}
		watch = false
		if h.wait(r.Context(), timeout, ws) != nil {
			// Timed out: read once more, so that the answer carries the
			// current index even when what we watched did not change.
			timedOut = true
			continue
		}
		select {
		case <-s.AbandonCh():
			abandoned = true
		default:
		}
		// A node that lost leadership while we waited must not answer.
		if !opts.stale {
			if err := h.backend.CheckRead(false); err != nil {
				return meta, err
			}
		}
	}
	meta.knownLeader = h.backend.KnownLeader()
	meta.lastContact = h.backend.LastContact()
	return meta, nil
}

// setMeta writes the read headers, under our names and, where an official
// client expects them, under upstream's too. Every prefix's header shares
// one value slice of capacity one (an Add reallocates it; nothing writes an
// element): a woken blocking query sets six of these.
func setMeta(w http.ResponseWriter, r *http.Request, meta queryMeta) {
	values := [3]string{
		strconv.FormatUint(meta.index, 10),
		strconv.FormatBool(meta.knownLeader),
		strconv.FormatInt(meta.lastContact.Milliseconds(), 10),
	}
	h := w.Header()
	for _, names := range metaHeaderNames(r) {
		h[names[0]] = values[0:1:1]
		h[names[1]] = values[1:2:2]
		h[names[2]] = values[2:3:3]
	}
}

// wait blocks on ws until it fires (nil), timeout closes or ctx ends (an
// error), counted as a blocked query while it waits.
func (h *Handler) wait(ctx context.Context, timeout <-chan struct{}, ws memdb.WatchSet) error {
	h.blocked.Add(1)
	h.blockedChanged()
	defer func() {
		h.blocked.Add(-1)
		h.blockedChanged()
	}()
	return watchSet(ctx, timeout, ws)
}

// errWaitEnded is watchSet's answer when its timeout closes.
var errWaitEnded = errors.New("blocking query wait ended")

// watchSet blocks until a channel of ws closes (nil), timeout closes
// (errWaitEnded) or ctx ends (its error). memdb's WatchCtx selects over 32
// cases for any set of up to 32 channels; a read watches two to four, so
// those get a select of their own size.
func watchSet(ctx context.Context, timeout <-chan struct{}, ws memdb.WatchSet) error {
	if len(ws) > 4 {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		go func() {
			select {
			case <-timeout:
				cancel(errWaitEnded)
			case <-ctx.Done():
			}
		}()
		if err := ws.WatchCtx(ctx); err != nil {
			return context.Cause(ctx)
		}
		return nil
	}
	var chs [4]<-chan struct{} // nil channels never fire
	i := 0
	for ch := range ws {
		chs[i] = ch
		i++
	}
	select {
	case <-chs[0]:
	case <-chs[1]:
	case <-chs[2]:
	case <-chs[3]:
	case <-timeout:
		return errWaitEnded
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// gaugeDelay is how long a change of the blocked-query count waits to be
// published, with every change made meanwhile.
const gaugeDelay = 50 * time.Millisecond

// blockedChanged publishes the blocked-query gauge shortly, once for all
// the changes until then: thousands of watchers woken by one write would
// otherwise each take the metrics sinks' locks twice, in a row.
func (h *Handler) blockedChanged() {
	if h.gaugeDue.CompareAndSwap(false, true) {
		time.AfterFunc(gaugeDelay, func() {
			// Cleared before the read: a change after the read schedules
			// its own publication.
			h.gaugeDue.Store(false)
			metrics.SetGauge([]string{"http", "blocking_queries"}, float32(h.blocked.Load()))
		})
	}
}

// blockingRead is the common shape of a read endpoint: parse the query
// options, run read as a blocking query, write the meta headers, and
// answer what the last run of read returned.
func blockingRead[T any](h *Handler, w http.ResponseWriter, r *http.Request, read func(ws memdb.WatchSet, s *state.Store) (uint64, T, error)) (T, error) {
	var out T
	opts, err := parseQueryOptions(r)
	if err != nil {
		return out, err
	}
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, v, err := read(ws, s)
		out = v
		return idx, err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	setMeta(w, r, meta)
	return out, nil
}
