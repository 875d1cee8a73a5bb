package client

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// Rotation copies the current file to index 1 (older ones move up, the
// oldest beyond the limit is dropped) and truncates it; a read from the
// start sees every kept byte in order, and offsets count across files.
func TestLogRotationAndRead(t *testing.T) {
	p := taskPaths{logDir: t.TempDir()}
	cur := p.logPath("t", "stdout", 0)
	f, err := os.OpenFile(cur, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []string{"aaaa\n", "bbbb\n", "cccc\n", "dddd\n"} {
		if _, err := f.WriteString(chunk); err != nil {
			t.Fatal(err)
		}
		// 5-byte files, at most 3: "aaaa" is dropped by the fourth rotation.
		if err := rotateStream(p, "t", "stdout", 3, 5); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString("eeee\n"); err != nil {
		t.Fatal(err)
	}
	read := func(offset int64, fromEnd bool) string {
		var b bytes.Buffer
		err := streamLogs(context.Background(), &b, logRequest{paths: p, task: "t", stream: "stdout", maxFiles: 3, offset: offset, fromEnd: fromEnd,
			running: func() bool { return false }})
		if err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if got := read(0, false); got != "cccc\ndddd\neeee\n" {
		t.Errorf("whole stream: %q", got)
	}
	if got := read(7, false); got != "dd\neeee\n" {
		t.Errorf("from offset 7: %q", got)
	}
	if got := read(7, true); got != "d\neeee\n" {
		t.Errorf("last 7 bytes: %q", got)
	}
	if got := read(100, true); got != "cccc\ndddd\neeee\n" {
		t.Errorf("more than there is: %q", got)
	}
	if _, err := os.Stat(p.logPath("t", "stdout", 3)); !os.IsNotExist(err) {
		t.Errorf("a fourth file was kept: %v", err)
	}
	if got := read(0, false); strings.Contains(got, "aaaa") || strings.Contains(got, "bbbb") {
		t.Errorf("dropped output is back: %q", got)
	}
}
