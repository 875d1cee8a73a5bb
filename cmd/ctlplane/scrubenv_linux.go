package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// scrubInitialEnviron blanks (with NUL bytes) the entries of these
// variables in the environment block the process was started with, which
// is what /proc/PID/environ shows to any process of the same user (a
// raw_exec task, say): os.Unsetenv only changes Go's copy. It writes
// through /proc/self/mem, at the block's address from /proc/self/stat.
func scrubInitialEnviron(names ...string) error {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	// The fields after the command's closing parenthesis start at field 3;
	// env_start and env_end are fields 50 and 51.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return fmt.Errorf("unexpected /proc/self/stat")
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 49 {
		return fmt.Errorf("/proc/self/stat has no environment address (kernel older than 3.5)")
	}
	start, err := strconv.ParseInt(string(fields[47]), 10, 64)
	if err != nil {
		return fmt.Errorf("/proc/self/stat: env_start: %w", err)
	}
	env, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	off := int64(0)
	for _, entry := range bytes.Split(env, []byte{0}) {
		for _, name := range names {
			if bytes.HasPrefix(entry, []byte(name+"=")) {
				if _, err := mem.WriteAt(make([]byte, len(entry)), start+off); err != nil {
					return fmt.Errorf("blanking %s: %w", name, err)
				}
			}
		}
		off += int64(len(entry)) + 1
	}
	return nil
}
