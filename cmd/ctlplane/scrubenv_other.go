//go:build !linux

package main

import "errors"

// scrubInitialEnviron is Linux-only (/proc/self/mem).
func scrubInitialEnviron(names ...string) error {
	return errors.New("not supported on this operating system")
}
