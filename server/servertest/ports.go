package servertest

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// Ports for tests come from blocks of portBlockSize ports between
// portPoolLow and the start of the kernel's ephemeral range (at most
// state.DefaultMinDynamicPort). A process holds a block by listening on
// its first port for as long as it runs (as Consul's sdk/freeport does),
// so that test binaries running side by side (go test ./...) never hand
// out the same port; and no block overlaps the dynamic port range a dev
// agent's client gives its tasks (20000–32000), nor the ephemeral range
// that port-0 listeners and outgoing connections take ports from. So the
// tests pass beside a running `ctlplane agent -dev` and its services.
const (
	portPoolLow   = 10000
	portPoolHigh  = state.DefaultMinDynamicPort // a dev client's range starts here
	portBlockSize = 500
	// devPortRangeSize is how many dynamic ports a test agent's client
	// node may hand out at once.
	devPortRangeSize = 100
)

var ports struct {
	mu sync.Mutex
	// sentinels hold this process's blocks.
	sentinels []net.Listener
	// next is the next unused port of the newest block, end its end.
	next, end int
	// freeRanges are dynamic ranges back from tests that ended.
	freeRanges []int
}

// takePorts returns the first of n consecutive ports of this process's
// blocks, reserving a new block when the current one is used up.
func takePorts(t testing.TB, n int) int {
	t.Helper()
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.next+n > ports.end {
		if err := reserveBlockLocked(); err != nil {
			t.Fatal(err)
		}
	}
	first := ports.next
	ports.next += n
	return first
}

// reserveBlockLocked takes the first block no other process holds.
func reserveBlockLocked() error {
	hi := min(portPoolHigh, ephemeralLow())
	for lo := portPoolLow; lo+portBlockSize <= hi; lo += portBlockSize {
		if lo < ports.end { // ours already
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lo))
		if err != nil {
			continue // another process's block, or a port in use
		}
		ports.sentinels = append(ports.sentinels, ln)
		ports.next, ports.end = lo+1, lo+portBlockSize
		return nil
	}
	return fmt.Errorf("no free block of %d test ports in [%d, %d)", portBlockSize, portPoolLow, hi)
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux:
// /proc/sys/net/ipv4/ip_local_port_range; elsewhere IANA's 49152).
func ephemeralLow() int {
	if buf, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(buf)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 49152
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago, for a server that must know its address before it starts (a
// cluster's join list, a restart on the same port). The port is from this
// process's blocks (see above): no port-0 listener, outgoing connection,
// parallel test binary or dev agent's task can take it before the caller
// binds it, and it is never handed out twice in one process.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 1000 {
		port := takePorts(t, 1)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // something outside the tests holds it
		}
		ln.Close()
		return ln.Addr().String()
	}
	t.Fatal("found no free test port")
	return ""
}

// DynamicPortRange returns a range of ports [lo, hi] for a test's client
// node to hand out as dynamic ports: its own, from this process's blocks,
// so that its tasks never meet a running dev agent's (which hands out
// 20000 up) nor another test's. The range is reused after the test ends.
func DynamicPortRange(t testing.TB) (lo, hi int) {
	t.Helper()
	ports.mu.Lock()
	if n := len(ports.freeRanges); n > 0 {
		lo = ports.freeRanges[n-1]
		ports.freeRanges = ports.freeRanges[:n-1]
	}
	ports.mu.Unlock()
	if lo == 0 {
		lo = takePorts(t, devPortRangeSize)
	}
	t.Cleanup(func() {
		ports.mu.Lock()
		ports.freeRanges = append(ports.freeRanges, lo)
		ports.mu.Unlock()
	})
	return lo, lo + devPortRangeSize - 1
}
