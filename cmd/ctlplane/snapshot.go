package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/snapshot"
)

const snapshotUsage = `Usage: ctlplane snapshot <save|restore|inspect> [flags] FILE

  save [-address=URL] [-stale] FILE   write a snapshot archive of the cluster's state to FILE
  restore [-address=URL] FILE         restore FILE onto the whole cluster
  inspect FILE                        show what FILE holds and check it
`

func runSnapshot(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, snapshotUsage)
		return 1
	}
	flags := flag.NewFlagSet("snapshot "+args[0], flag.ContinueOnError)
	flags.SetOutput(stderr)
	var client *apiClient
	stale := false
	if args[0] != "inspect" {
		client = clientFlags(flags)
	}
	if args[0] == "save" {
		flags.BoolVar(&stale, "stale", false, "let any server, not only the leader, produce the snapshot")
	}
	if err := flags.Parse(args[1:]); err != nil {
		return 1
	}
	if flags.NArg() != 1 {
		fmt.Fprint(stderr, snapshotUsage)
		return 1
	}
	file := flags.Arg(0)
	var err error
	switch args[0] {
	case "save":
		err = snapshotSave(client, file, stale, stdout)
	case "restore":
		err = snapshotRestore(client, file, stdout)
	case "inspect":
		err = snapshotInspect(file, stdout)
	default:
		fmt.Fprintf(stderr, "unknown snapshot command %q\n\n%s", args[0], snapshotUsage)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

func snapshotSave(c *apiClient, file string, stale bool, stdout io.Writer) error {
	path := "/v1/snapshot"
	if stale {
		path += "?stale"
	}
	resp, err := c.do("GET", path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// Write aside and verify before the file takes its name: a failed or
	// cut transfer must never leave a file that looks like a snapshot.
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, resp.Body); err != nil {
		tmp.Close()
		return fmt.Errorf("receiving the snapshot failed: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	meta, err := verifyArchive(tmp.Name())
	if err != nil {
		return fmt.Errorf("the received snapshot is not valid: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Saved and verified snapshot to index %d\n", meta.Index)
	return nil
}

func verifyArchive(file string) (*snapshot.Meta, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := snapshot.Read(f)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return &a.Meta, nil
}

func snapshotRestore(c *apiClient, file string, stdout io.Writer) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	resp, err := c.do("PUT", "/v1/snapshot", f)
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintln(stdout, "Restored snapshot")
	return nil
}

func snapshotInspect(file string, stdout io.Writer) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	a, err := snapshot.Read(io.TeeReader(f, h))
	if err != nil {
		return err
	}
	defer a.Close()
	body, err := a.State()
	if err != nil {
		return err
	}
	counts, err := fsm.VerifySnapshot(body)
	if err != nil {
		return fmt.Errorf("the state does not decode: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ID          %s\n", a.Meta.ID)
	fmt.Fprintf(stdout, "Index       %d\n", a.Meta.Index)
	fmt.Fprintf(stdout, "Term        %d\n", a.Meta.Term)
	fmt.Fprintf(stdout, "Created     %s\n", a.Meta.CreatedAt.Format("2006-01-02T15:04:05Z07:00"))
	fmt.Fprintf(stdout, "Size        %d bytes (state %d bytes)\n", info.Size(), a.Meta.Size)
	fmt.Fprintf(stdout, "SHA-256     %s\n", hex.EncodeToString(h.Sum(nil)))
	fmt.Fprintf(stdout, "Checksums   ok\n\n")
	tables := make([]string, 0, len(counts))
	for t := range counts {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	fmt.Fprintf(stdout, "%-24s %s\n", "Table", "Objects")
	for _, t := range tables {
		fmt.Fprintf(stdout, "%-24s %d\n", t, counts[t])
	}
	return nil
}
