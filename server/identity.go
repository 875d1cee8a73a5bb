package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// keyHash is what a server record keeps of the server's key.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// loadServerKey returns the server's secret key: random in dev mode,
// otherwise generated once and kept in the data directory (mode 0600). It
// proves, when the server asks the leader to change its record, that the
// request comes from the server itself.
func (s *Server) loadServerKey() (string, error) {
	if s.config.Dev {
		return randomKey()
	}
	path := filepath.Join(s.config.DataDir, "server-key")
	if buf, err := os.ReadFile(path); err == nil {
		if key := strings.TrimSpace(string(buf)); len(key) >= 32 {
			return key, nil
		}
		return "", fmt.Errorf("the server key in %s is too short; remove the file to make a new one", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("failed to read the server key: %w", err)
	}
	key, err := randomKey()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(key), 0o600); err != nil {
		return "", fmt.Errorf("failed to write the server key: %w", err)
	}
	return key, nil
}

func randomKey() (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf), nil
}

// aclMismatchPrefix starts every refusal for a differing ACL mode; a server
// that gets it stops.
const aclMismatchPrefix = "ACL mode mismatch: "

func aclMismatch(who string, theirs, ours bool) error {
	return fmt.Errorf("%s%s has -acl-enabled=%t but the cluster has -acl-enabled=%t; the ACL mode is cluster state and every server must agree: start it with -acl-enabled=%t",
		aclMismatchPrefix, who, theirs, ours, ours)
}

// checkACLMode keeps the ACL mode in the data directory at first start and
// refuses a later start with the other mode: a server that belongs to a
// cluster cannot change the cluster's ACL mode by itself.
func (s *Server) checkACLMode() error {
	if s.config.Dev {
		return nil
	}
	path := filepath.Join(s.config.DataDir, "acl-enabled")
	buf, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(path, []byte(strconv.FormatBool(s.config.ACLEnabled)), 0o600)
	}
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", path, err)
	}
	was, err := strconv.ParseBool(strings.TrimSpace(string(buf)))
	if err != nil {
		return fmt.Errorf("%s holds %q, not true or false", path, buf)
	}
	if was != s.config.ACLEnabled {
		return fmt.Errorf("%sthis server's data directory belongs to a cluster with -acl-enabled=%t, but the agent was started with -acl-enabled=%t; the ACL mode is cluster state: start it with -acl-enabled=%t",
			aclMismatchPrefix, was, s.config.ACLEnabled, was)
	}
	return nil
}

// fail reports an error the agent cannot go on with (see Fatal).
func (s *Server) fail(err error) {
	s.logger.Error("stopping: " + err.Error())
	s.failOnce.Do(func() { close(s.failed) })
	select {
	case s.fatalCh <- err:
	default:
	}
}

// Fatal delivers an error after which this server must stop, found after
// start (e.g. the cluster it joins has another ACL mode). The agent exits.
func (s *Server) Fatal() <-chan error { return s.fatalCh }
