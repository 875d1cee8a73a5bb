package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every store write opens its transaction with writeTxn or orchTxn (both in
// events.go), so that the event stream sees its changes: a write transaction opened any other way would
// change the state without events. (Restore builds a new store: no events.)
func TestWriteTransactionsAreTracked(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "events.go" || f == "snapshot.go" {
			continue
		}
		buf, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(buf), "\n") {
			if strings.Contains(line, ".Txn(true)") {
				t.Errorf("%s:%d opens a write transaction without writeTxn: its changes give no events", f, i+1)
			}
		}
	}
}
