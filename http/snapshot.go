package http

import (
	"net/http"
)

// maxSnapshotSize bounds a snapshot archive upload.
const maxSnapshotSize = 8 << 30

func (h *Handler) registerSnapshot() {
	h.handleWithLimit("/v1/snapshot", maxSnapshotSize, methods{
		{http.MethodGet, h.operatorService(h.snapshotSave)},
		{http.MethodPut, h.operatorService(h.snapshotRestore)},
	})
}

// headerWriter sets the archive headers on the first write, so that an error
// before any byte is sent is still answered as an error.
type headerWriter struct {
	w       http.ResponseWriter
	started bool
}

func (hw *headerWriter) Write(p []byte) (int, error) {
	if !hw.started {
		hw.started = true
		hw.w.Header().Set("Content-Type", "application/x-gzip")
		hw.w.WriteHeader(http.StatusOK)
	}
	return hw.w.Write(p)
}

func (h *Handler) snapshotSave(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	snaps, err := h.services.Operator.Snapshots(id.caller())
	if err != nil {
		return nil, err
	}
	if !opts.stale {
		if err := h.backend.CheckRead(opts.consistent); err != nil {
			return nil, err
		}
	}
	hw := &headerWriter{w: w}
	if err := snaps.Save(hw); err != nil {
		if hw.started {
			// Part of an archive is out: cut the connection so that the
			// client sees a failed transfer, never a short archive.
			h.logger.Error("snapshot save failed mid-stream", "error", err)
			panic(http.ErrAbortHandler)
		}
		return nil, err
	}
	return written, nil
}

func (h *Handler) snapshotRestore(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	snaps, err := h.services.Operator.Snapshots(id.caller())
	if err != nil {
		return nil, err
	}
	if err := snaps.Restore(r.Body); err != nil {
		return nil, err
	}
	return true, nil
}
