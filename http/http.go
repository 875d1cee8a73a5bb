// Package http serves ctlplane's HTTP API. A handler decodes a request,
// resolves its token, calls a domain service (Services), which decides
// whether the caller may act and writes through Raft, and encodes the
// answer; reads block when asked to. http asks no permission itself: a
// write is decided by its service, a read by its family's read rule
// (jobs.ReadJob, deployments.ReadDeployment, nodes.ReadNodes, ...), a
// function of the acl.Caller in the service's package, since every server
// answers reads from its own store whether or not the family's service is
// wired in. The refusal is the service's error, worded in serve().
package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctlplane/ctlplane/limits"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-hclog"
)

// Backend is what the HTTP layer needs from a server: the small
// interfaces below, each named for what its endpoints use. No Raft type
// crosses it.
type Backend interface {
	StateReader
	ReadChecker
	Operator
	AgentInfo
}

// StateReader gives the current state store (it changes on snapshot restore).
type StateReader interface {
	State() *state.Store
}

// ReadChecker is what reads need: may this server answer (default or
// consistent mode), and what it reports about the leader.
type ReadChecker interface {
	CheckRead(consistent bool) error
	KnownLeader() bool
	LastContact() time.Duration
}

// Operator is what the status and operator endpoints report about the
// cluster (the operations themselves are the operator service's).
type Operator interface {
	Leader() string
	Peers() ([]string, error)
	// ServerNames maps server IDs to node names.
	ServerNames() map[string]string
}

// AgentInfo is the agent's configuration the handlers depend on.
type AgentInfo interface {
	ACLEnabled() bool
	IsDev() bool
	Datacenter() string
}

// written is returned by a handler that has written its response itself.
var written = &struct{}{}

// maxBodySize is the largest request body accepted.
const maxBodySize = limits.MaxBodyBytes

// Handler serves the API.
type Handler struct {
	backend  Backend
	logger   hclog.Logger
	router   *mux.Router
	services Services
	// local are the routes this server answers itself (not the leader).
	local map[*mux.Route]bool
	// exact are the routes without path variables that no route registered
	// before them matches, by path: served without gorilla/mux, whose two
	// request copies (route and variables) were 2.4% of a create's CPU.
	exact map[string]http.Handler
	// blocked counts the blocking queries waiting now.
	blocked atomic.Int64
	// gaugeDue: a publication of blocked is scheduled (see blockedChanged).
	gaugeDue atomic.Bool
	// deadlines end the blocking queries' waits.
	deadlines deadlines
	// events configures GET /v1/event/stream (event_stream.go).
	events eventStreamConfig
}

// BlockedQueries is how many blocking queries are waiting now (tests use it
// to know that a query blocked before they write).
func (h *Handler) BlockedQueries() int64 { return h.blocked.Load() }

// New returns the API handler over backend, with the orchestrator's domain services.
func New(backend Backend, logger hclog.Logger, services Services) *Handler {
	if services.ACL == nil {
		// Every request's token is resolved by it; the composition root
		// (server/agent/wire.go) builds it.
		panic("http.New: Services.ACL is nil")
	}
	h := &Handler{backend: backend, logger: logger.Named("http"), router: mux.NewRouter(), services: services}
	// Paths are matched as sent: cleaning would answer "//v1/..." with a
	// redirect (which turns a PUT into a GET) instead of a 404.
	h.router.SkipClean(true)
	h.router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Invalid URL path: not a recognized HTTP API endpoint")
	})
	h.registerStatus()
	h.registerBindingRules()
	h.registerAuthMethods()
	h.registerLogin()
	h.registerPolicies()
	h.registerTokens()
	h.registerRoles()
	h.registerOperator()
	h.registerSnapshot()
	h.registerMetrics()
	h.registerDeployments()
	h.registerNodes()
	h.registerJobs()
	h.registerJobPlan()
	h.registerClientFS()
	h.registerClientNode()
	h.registerSystem()
	h.registerNomadCLI()
	h.registerEventStream()
	h.registerUI()
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if route := h.exact[r.URL.Path]; route != nil {
		route.ServeHTTP(w, r)
		return
	}
	h.router.ServeHTTP(w, r)
}

// methods dispatches by HTTP method; anything else is 405 with Allow.
type methods []struct {
	method  string
	handler apiFunc
}

// apiFunc answers a request with an object to encode as JSON, or an error.
type apiFunc func(w http.ResponseWriter, r *http.Request) (any, error)

func (h *Handler) handle(path string, m methods) {
	h.handleWithLimit(path, maxBodySize, m)
}

// handleLocal registers a route that every server answers itself, from its
// own state (status, its own metrics), instead of the leader.
func (h *Handler) handleLocal(path string, m methods) {
	route := h.handleWithLimit(path, maxBodySize, m)
	if h.local == nil {
		h.local = map[*mux.Route]bool{}
	}
	h.local[route] = true
}

// Routes lists the path templates of every route, in the order they were
// registered (a test drives every write endpoint through it).
func (h *Handler) Routes() []string {
	var out []string
	h.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		if tmpl, err := route.GetPathTemplate(); err == nil {
			out = append(out, tmpl)
		}
		return nil
	})
	return out
}

// AnsweredLocally says whether r's route is answered by this server itself
// (see handleLocal); every other route is answered by the leader.
func (h *Handler) AnsweredLocally(r *http.Request) bool {
	var match mux.RouteMatch
	return h.router.Match(r, &match) && match.Route != nil && h.local[match.Route]
}

// handleWithLimit is handle with its own request body size limit.
func (h *Handler) handleWithLimit(path string, bodyLimit int64, m methods) *mux.Route {
	allow := []string{http.MethodOptions}
	for _, e := range m {
		allow = append(allow, e.method)
	}
	allowHeader := strings.Join(allow, ",")
	// gorilla/mux tries the routes in order, each with its path regexp: a
	// request for a route registered late ran some fifty regexps before its
	// own. A route first checks the template's static prefix, which its
	// regexp requires anyway (mux matches r.URL.Path, we do not use
	// UseEncodedPath), so only routes that can match run a regexp.
	prefix, _, hasVars := strings.Cut(path, "{")
	// mux answers with the first route that matches: a static path is
	// served directly only when none registered before it matches it.
	exact := !hasVars && !h.routed(path)
	route := h.router.NewRoute().MatcherFunc(func(r *http.Request, _ *mux.RouteMatch) bool {
		return strings.HasPrefix(r.URL.Path, prefix)
	}).Path(path)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			w.Header().Set("Allow", allowHeader)
			return
		}
		for _, e := range m {
			if e.method == r.Method {
				h.serve(w, r, path, bodyLimit, e.handler)
				return
			}
		}
		w.Header().Set("Allow", allowHeader)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed", r.Method))
	})
	if exact {
		if h.exact == nil {
			h.exact = map[string]http.Handler{}
		}
		h.exact[path] = handler
	}
	return route.Handler(handler)
}

// routed says whether a route registered so far matches path with any
// method.
func (h *Handler) routed(path string) bool {
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		// With a NotFoundHandler, Match is true for every path: a route
		// matched only when it names one.
		var match mux.RouteMatch
		if h.router.Match(&http.Request{Method: method, URL: &url.URL{Path: path}}, &match) && match.Route != nil {
			return true
		}
	}
	return false
}

// serve runs fn, the handler of the route template route, and writes its
// result or its error.
func (h *Handler) serve(rw http.ResponseWriter, r *http.Request, route string, bodyLimit int64, fn apiFunc) {
	start := time.Now()
	rw.Header()["Date"] = dateHeader(start)
	w := &statusRecorder{ResponseWriter: rw}
	defer func() { measureRequest(r, route, start, w.status) }()
	defer func() {
		// A bug must not take the server down with it; the client sees a 500.
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.logger.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p)
			writeError(w, http.StatusInternalServerError, "internal error while serving the request")
		}
	}()
	if r.Body != nil && r.Body != http.NoBody { // a GET's has nothing to limit
		r.Body = http.MaxBytesReader(w, r.Body, bodyLimit)
	}
	obj, err := fn(w, r)
	if err != nil {
		var denied *acl.DeniedError
		if errors.As(err, &denied) {
			err = h.deniedError(denied.AccessorID, denied.Perm)
		}
		code, msg := errorStatus(err)
		if code >= 500 {
			h.logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", code, "error", msg)
		}
		writeError(w, code, msg)
		return
	}
	if obj != written {
		writeJSON(w, r, obj)
	}
}

// apiError is an error with the status it is answered with.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(msg string) error { return &apiError{code: http.StatusNotFound, msg: msg} }

// isNotFound says whether err is the state store's not-found rejection.
func isNotFound(err error) bool {
	var se *state.Error
	return errors.As(err, &se) && se.Code == state.ErrNotFound
}

// errorStatus picks the status of an error: our own, the backend's (an
// error with a StatusCode method), the state store's, or 500.
func errorStatus(err error) (int, string) {
	var api *apiError
	if errors.As(err, &api) {
		return api.code, api.msg
	}
	var se *state.Error
	if errors.As(err, &se) {
		switch se.Code {
		case state.ErrNotFound:
			return http.StatusNotFound, se.Msg
		case state.ErrInvalid:
			return http.StatusBadRequest, se.Msg
		case state.ErrConflict:
			return http.StatusConflict, se.Msg
		case state.ErrForbidden:
			return http.StatusForbidden, se.Msg
		case state.ErrUnavailable:
			return http.StatusServiceUnavailable, se.Msg
		}
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body too large: the limit is %d bytes", tooLarge.Limit)
	}
	msg := err.Error()
	if msg == "" {
		msg = "An unexpected error occurred"
	}
	return http.StatusInternalServerError, msg
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	io.WriteString(w, msg)
}

func writeJSON(w http.ResponseWriter, r *http.Request, obj any) {
	var buf []byte
	var err error
	stored, isStored := obj.(storedObject)
	if isStored {
		obj = stored.obj
	}
	switch pretty := queryHas(r.URL.RawQuery, "pretty"); {
	case pretty:
		buf, err = json.MarshalIndent(obj, "", "    ")
		buf = append(buf, '\n')
	case isStored:
		buf, err = encodeStored(obj)
	default:
		buf, err = json.Marshal(obj)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("failed to encode the response: %v", err))
		return
	}
	w.Header()["Content-Type"] = jsonContentType
	w.Write(buf)
}

// queryLookup is r.URL.Query()'s first value of name, and whether it is
// there, without building the map when it need not: every answer asks for
// ?pretty, a read for its options and namespace, and parsing the whole
// query into a map for each was an eighth of what opening a blocking query
// allocated. A query with escapes, a ';', many parameters, or a process
// whose GODEBUG sets urlmaxqueryparams goes through ParseQuery.
func queryLookup(raw, name string) (string, bool) {
	if raw == "" {
		return "", false
	}
	if urlParamLimitSet || strings.ContainsAny(raw, "%+;") || strings.Count(raw, "&") >= 100 {
		v, _ := url.ParseQuery(raw) // as URL.Query: the pairs that parsed
		vs, ok := v[name]
		if !ok {
			return "", false
		}
		return vs[0], true
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if key, value, _ := strings.Cut(pair, "="); pair != "" && key == name {
			return value, true
		}
	}
	return "", false
}

// queryHas is r.URL.Query().Has(name), by queryLookup.
func queryHas(raw, name string) bool {
	_, ok := queryLookup(raw, name)
	return ok
}

var urlParamLimitSet = strings.Contains(os.Getenv("GODEBUG"), "urlmaxqueryparams")

// jsonContentType is shared by every JSON answer: net/http only reads a
// header's values, and an Add to it would append to a full slice (a copy).
var jsonContentType = []string{"application/json"}

// decodeBody decodes a JSON request body strictly into out: unknown fields,
// an empty body, a second value after the first, a body over the limit, or
// one over the bounds on nesting, elements and strings (package limits) are
// all errors. what names the object in the message
// ("<what> decoding failed: ...").
func decodeBody(r *http.Request, what string, out any) error {
	return decodeStrict(r, what+" decoding failed", out)
}

// decodeStrict is decodeBody with the message prefix given whole.
func decodeStrict(r *http.Request, prefix string, out any) error {
	if r.Body == nil {
		return decodeFailed(prefix, io.EOF)
	}
	return decodeStrictFrom(r.Body, prefix, out)
}

// decodeStrictFrom is decodeStrict from the body's bytes in src.
func decodeStrictFrom(src io.Reader, prefix string, out any) error {
	src = limits.NewJSONReader(src)
	dec := json.NewDecoder(src)
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return decodeFailed(prefix, err)
	}
	// Only whitespace may follow the object.
	if err := onlySpaceLeft(dec.Buffered(), src); err != nil {
		return decodeFailed(prefix, err)
	}
	return nil
}

// decodeFailed is a body decoding error: 400 with the prefix, or a body
// over the limit as it is (413).
func decodeFailed(prefix string, err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return err
	}
	return badRequest("%s: %v", prefix, err)
}

// errDataAfterObject: something other than whitespace follows the body's
// JSON object.
var errDataAfterObject = errors.New("unexpected data after the JSON object")

// restBuffers are reused to read what follows a body's JSON object
// (usually nothing: io.ReadAll allocated 512 bytes per request to see so).
var restBuffers = sync.Pool{New: func() any { return new([512]byte) }}

// onlySpaceLeft reads the decoder's buffered rest and then the body to
// their ends and says whether anything but white space was there.
func onlySpaceLeft(buffered, body io.Reader) error {
	buf := restBuffers.Get().(*[512]byte)
	defer restBuffers.Put(buf)
	for _, rd := range []io.Reader{buffered, body} {
		for {
			n, err := rd.Read(buf[:])
			if len(bytes.TrimSpace(buf[:n])) != 0 {
				return errDataAfterObject
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// httpDate is the Date header of a response at now, formatted once a
// second rather than by net/http for every response.
func httpDate(now time.Time) string { return dateHeader(now)[0] }

// dateHeader is httpDate as a header value, shared by every response of
// the second as jsonContentType is.
func dateHeader(now time.Time) []string {
	sec := now.Unix()
	if d := dateCache.Load(); d != nil && d.sec == sec {
		return d.value
	}
	value := []string{now.UTC().Format(http.TimeFormat)}
	dateCache.Store(&cachedDate{sec: sec, value: value})
	return value
}

type cachedDate struct {
	sec   int64
	value []string
}

var dateCache atomic.Pointer[cachedDate]
