package state

import "unique"

// Many rows repeat the same short strings: every binding rule of an auth
// method names it, and most share a namespace, a bind type and often a
// selector and a bind name. Each row decoded from a snapshot or a log entry
// gets its own copy of every string, so 1M rules held tens of MB of
// identical bytes. Rows share one copy instead.

// shared returns the canonical copy of a string from a small set (auth
// method names, namespaces, bind types): for the life of the process,
// through Go's unique package, so it is only for values of bounded variety.
func shared(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
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
