package state

import (
	"strings"
	"sync"
)

// Many rows repeat the same short strings: every binding rule of an auth
// method names it, and most share a namespace, a bind type and often a
// selector and a bind name. Each row decoded from a snapshot or a log entry
// gets its own copy of every string, so 1M rules held tens of MB of
// identical bytes. Rows share one copy instead.

// sharedNames holds the canonical copy of each shared string. (Go's unique
// package holds a canonical value only while a Handle to it is alive: the
// rows keep the string, not the Handle, so a collection between two rows
// gave them two copies.)
var sharedNames struct {
	sync.RWMutex
	m map[string]string
}

// maxSharedNames bounds sharedNames: past it, strings are kept as they are.
const maxSharedNames = 1 << 14

// shared returns the canonical copy of a string from a small set (auth
// method names, namespaces, bind types), for the life of the process, so
// it is only for values of bounded variety.
func shared(s string) string {
	if s == "" {
		return s
	}
	sharedNames.RLock()
	c, ok := sharedNames.m[s]
	sharedNames.RUnlock()
	if ok {
		return c
	}
	sharedNames.Lock()
	defer sharedNames.Unlock()
	if c, ok := sharedNames.m[s]; ok {
		return c
	}
	if sharedNames.m == nil {
		sharedNames.m = map[string]string{}
	}
	if len(sharedNames.m) >= maxSharedNames {
		return s
	}
	// A copy of its own: s may point into a larger buffer (a decoded entry).
	c = strings.Clone(s)
	sharedNames.m[c] = c
	return c
}

// stringSharer is a row that can share its repeated strings: it replaces
// each with what share returns for it.
type stringSharer interface {
	shareStrings(share func(string) string)
}

// maxRestoreStrings bounds the distinct strings a restore remembers to share:
// past it, rows still share the strings already known, and new ones are kept
// as decoded (a snapshot of all-different selectors does not fill a map).
const maxRestoreStrings = 1 << 16

// restoreStrings shares equal strings among the rows of one restore; it is
// dropped with the restore.
type restoreStrings map[string]string

func (m restoreStrings) share(s string) string {
	if s == "" {
		return s
	}
	if c, ok := m[s]; ok {
		return c
	}
	if len(m) < maxRestoreStrings {
		m[s] = s
	}
	return s
}
