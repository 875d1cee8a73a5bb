package server

import (
	"errors"
	"fmt"
	"io"
	"time"

	metrics "github.com/armon/go-metrics"
	"github.com/ctlplane/ctlplane/server/snapshot"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/raft"
)

// SnapshotSave streams a snapshot archive of this server's state to w. It
// takes a Raft snapshot (or uses the latest when nothing is new since).
func (s *Server) SnapshotSave(w io.Writer) error {
	defer metrics.MeasureSince([]string{"snapshot", "save"}, time.Now())
	meta, rc, err := s.openSnapshot()
	if err != nil {
		return err
	}
	defer rc.Close()
	metrics.SetGauge([]string{"snapshot", "size"}, float32(meta.Size))
	return snapshot.Write(w, meta, rc)
}

func (s *Server) openSnapshot() (*raft.SnapshotMeta, io.ReadCloser, error) {
	f := s.raft.Snapshot()
	if err := f.Error(); err == nil {
		return f.Open()
	} else if !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return nil, nil, fmt.Errorf("failed to take a snapshot: %w", err)
	}
	list, err := s.snapshots.List()
	if err != nil || len(list) == 0 {
		return nil, nil, fmt.Errorf("no snapshot to open: %v", err)
	}
	return s.snapshots.Open(list[0].ID)
}

// SnapshotRestore verifies an archive, then restores it onto the whole
// cluster through Raft's user-restore path. Anything wrong with the archive
// is a 400 and leaves the running state untouched.
func (s *Server) SnapshotRestore(r io.Reader) error {
	defer metrics.MeasureSince([]string{"snapshot", "restore"}, time.Now())
	archive, err := snapshot.Read(r)
	if err != nil {
		if errors.Is(err, snapshot.ErrInvalid) {
			return state.NewError(state.ErrInvalid, "%s", err.Error())
		}
		return err
	}
	defer archive.Close()
	body, err := archive.State()
	if err != nil {
		return err
	}
	// One restore at a time: the FSM keeps one prepared store. Decoding
	// the archive here both checks it and builds the store the FSM's
	// Restore swaps in when Raft hands it the same bytes.
	s.restoreMu.Lock()
	defer s.restoreMu.Unlock()
	defer s.fsm.DropPrepared()
	if err := s.fsm.PrepareRestore(body); err != nil {
		return state.NewError(state.ErrInvalid, "invalid snapshot archive: the state does not decode: %v", err)
	}
	if body, err = archive.State(); err != nil {
		return err
	}
	if err := s.raft.Restore(archive.Meta.RaftMeta(), body, time.Minute); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNoLeader
		}
		return fmt.Errorf("failed to restore the snapshot: %w", err)
	}
	// Followers apply the restore through InstallSnapshot; a barrier makes
	// sure this server has applied it before the client hears of success.
	if err := s.raft.Barrier(time.Minute).Error(); err != nil {
		return err
	}
	// The archive may come from another cluster, or from before ACLs: make
	// sure the built-in ACL objects and this cluster's server records exist.
	if err := s.establishACL(); err != nil {
		return fmt.Errorf("restored, but failed to recreate the built-in ACL objects: %w", err)
	}
	select {
	case s.registerCh <- struct{}{}:
	default:
	}
	return nil
}
