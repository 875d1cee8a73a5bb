package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// leaderRoutine runs while this server leads: its context is cancelled when
// leadership ends (or the server shuts down).
type leaderRoutine struct {
	name string
	run  func(ctx context.Context) error
}

// A leader routine that returns (or panics) while this server still leads
// is restarted after a backoff, so that nothing it does (scheduling,
// deployments, heartbeats) stops silently until the next term; one that
// keeps failing also makes the leader step down, so that a healthy node
// may lead (a single server has no one to hand over to and goes on
// restarting it).
const (
	routineBackoffMin = 100 * time.Millisecond
	routineBackoffMax = 10 * time.Second
	// routineMaxFailures in a row, each after less than routineHealthyRun,
	// make the leader step down.
	routineMaxFailures = 5
	routineHealthyRun  = time.Minute
)

// leaderRoutines is the registry of what runs on the leader: ACL reaping,
// the evaluation broker and plan applier, the deployment watcher, node
// heartbeats. Routines may be added at any time; one added while this node
// leads starts at once.
type leaderRoutines struct {
	mu       sync.Mutex
	routines []leaderRoutine
	// ctx is the current term's context, nil while not leading.
	ctx  context.Context
	wg   sync.WaitGroup
	stop context.CancelFunc
}

// AddLeaderRoutine registers run to be started each time this server becomes
// a ready leader, and stopped (its ctx cancelled) when it stops leading. It
// is meant to run until then: if it returns earlier it is restarted.
func (s *Server) AddLeaderRoutine(name string, run func(ctx context.Context)) {
	s.AddLeaderRoutineErr(name, func(ctx context.Context) error {
		run(ctx)
		return nil
	})
}

// AddLeaderRoutineErr is AddLeaderRoutine for a routine that may fail: an
// error returned while leading is logged and the routine restarted with
// backoff (and the leader steps down when it keeps failing).
func (s *Server) AddLeaderRoutineErr(name string, run func(ctx context.Context) error) {
	lr := &s.leader
	lr.mu.Lock()
	defer lr.mu.Unlock()
	r := leaderRoutine{name: name, run: run}
	lr.routines = append(lr.routines, r)
	if lr.ctx != nil {
		s.startRoutine(lr.ctx, r)
	}
}

// startRoutine runs r in its own goroutine, restarting it while ctx lasts;
// lr.mu is held.
func (s *Server) startRoutine(ctx context.Context, r leaderRoutine) {
	s.leader.wg.Add(1)
	go func() {
		defer s.leader.wg.Done()
		backoff, failures := routineBackoffMin, 0
		for {
			started := time.Now()
			panicked, err := s.runRoutine(ctx, r)
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				err = errors.New("returned while leading")
			}
			if time.Since(started) >= routineHealthyRun {
				backoff, failures = routineBackoffMin, 0
			}
			failures++
			s.logger.Error("leader routine stopped, restarting it", "routine", r.name, "error", err, "failures", failures, "backoff", backoff)
			// A panic is a bug: a healthy node should lead at once.
			if panicked || failures == routineMaxFailures {
				go s.stepDown(fmt.Sprintf("leader routine %s failed %d times: %v", r.name, failures, err))
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, routineBackoffMax)
		}
	}()
}

// runRoutine runs r once; a panic (a bug in one routine must not take the
// server down) comes back as an error.
func (s *Server) runRoutine(ctx context.Context, r leaderRoutine) (panicked bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked, err = true, fmt.Errorf("panicked: %v", p)
		}
	}()
	s.logger.Debug("starting leader routine", "routine", r.name)
	return false, r.run(ctx)
}

// startLeaderRoutines starts every routine for a new term.
func (s *Server) startLeaderRoutines() {
	lr := &s.leader
	lr.mu.Lock()
	defer lr.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	lr.ctx, lr.stop = ctx, cancel
	for _, r := range lr.routines {
		s.startRoutine(ctx, r)
	}
}

// stopLeaderRoutines cancels the term's routines and waits for them to return.
func (s *Server) stopLeaderRoutines() {
	lr := &s.leader
	lr.mu.Lock()
	if lr.stop != nil {
		lr.stop()
	}
	lr.ctx, lr.stop = nil, nil
	lr.mu.Unlock()
	lr.wg.Wait()
}

// establishLeadership makes a new leader ready to serve: every entry of
// earlier terms applied (a barrier), the built-in ACL objects written. Each
// step is retried with backoff; a leader that still cannot get ready gives
// leadership away instead of answering 503 for the rest of its term.
func (s *Server) establishLeadership(stopCh <-chan struct{}) bool {
	backoff := 100 * time.Millisecond
	for attempt := 1; attempt <= establishAttempts; attempt++ {
		err := s.establishOnce()
		if err == nil {
			return true
		}
		s.logger.Warn("failed to establish leadership", "attempt", attempt, "error", err)
		if !s.isRaftLeader() {
			return false
		}
		select {
		case <-time.After(backoff):
		case <-stopCh:
			return false
		case <-s.shutdownCh:
			return false
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	s.stepDown("could not establish leadership")
	return false
}

// establishAttempts bounds the tries before a leader steps down.
const establishAttempts = 5

func (s *Server) establishOnce() error {
	if hook := s.config.EstablishHook; hook != nil {
		if err := hook(); err != nil {
			return err
		}
	}
	if err := s.raft.Barrier(0).Error(); err != nil {
		return err
	}
	return s.establishACL()
}

// stepDown hands leadership to another voter. A single server has no one to
// hand it to; it keeps trying to get ready on its next term (raft re-elects it).
func (s *Server) stepDown(reason string) {
	s.logger.Error("stepping down as leader", "reason", reason)
	if err := s.raft.LeadershipTransfer().Error(); err != nil {
		s.logger.Warn("leadership transfer failed", "error", err)
	}
}
