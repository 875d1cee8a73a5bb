package server

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// Defaults of the HTTP limits.
const (
	// DefaultHTTPMaxConnsPerClient is Consul's http_max_conns_per_client.
	DefaultHTTPMaxConnsPerClient = 200
	// DefaultHTTPBodyReadTimeout bounds reading a request body, so that a
	// client trickling one byte at a time cannot hold a connection.
	DefaultHTTPBodyReadTimeout = 30 * time.Second
	// snapshotUploadTimeout is the body deadline of a snapshot restore,
	// whose archive may be large.
	snapshotUploadTimeout = 10 * time.Minute
)

// bodyDeadline gives a request its body read deadline and lifts it once the
// body has been read to the end. There is no deadline on the whole request
// or on writing the response: a blocking query may wait 10 minutes.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			timeout := s.config.HTTPBodyReadTimeout
			if r.Method == http.MethodPut && r.URL.Path == "/v1/snapshot" {
				timeout = max(timeout, snapshotUploadTimeout)
			}
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(timeout)); err == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { rc.SetReadDeadline(time.Time{}) }}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline when the body has been read.
type deadlineBody struct {
	io.ReadCloser
	once sync.Once
	lift func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.lift)
	}
	return n, err
}
