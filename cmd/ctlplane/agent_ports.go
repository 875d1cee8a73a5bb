package main

import (
	"fmt"
	"strconv"
	"strings"
)

// maxReservedPortsFlag bounds -reserved-ports (as the servers do).
const maxReservedPortsFlag = 1024

// parseReservedPorts reads Nomad's reserved_ports form: comma-separated
// ports and ranges, "22,80,8000-8010".
func parseReservedPorts(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
			return nil, fmt.Errorf("invalid -reserved-ports %q: %q is not a port (1 to 65535) or a range of them", s, part)
		}
		if len(out)+b-a+1 > maxReservedPortsFlag {
			return nil, fmt.Errorf("invalid -reserved-ports %q: at most %d ports", s, maxReservedPortsFlag)
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out, nil
}
