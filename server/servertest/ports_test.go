package servertest

import (
	"fmt"
	"net"
	"strconv"
	"testing"
)

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// blockHeld says whether this process's sentinel holds port's block:
// another process cannot listen on the block's first port.
func blockHeld(port int) bool {
	first := portPoolLow + (port-portPoolLow)/portBlockSize*portBlockSize
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", first))
	if err == nil {
		ln.Close()
	}
	return err != nil
}

// Test ports stay below a dev client's dynamic range (20000–32000) and the
// kernel's ephemeral range, are handed out once, sit in blocks this
// process holds, and a test client's dynamic range is its own, reused
// once its test ends.
func TestPortsStayOutOfTheDevClientsRange(t *testing.T) {
	hi := min(portPoolHigh, ephemeralLow())
	seen := map[int]string{}
	inPool := func(t *testing.T, what string, port int) {
		t.Helper()
		if port < portPoolLow || port >= hi {
			t.Fatalf("%s: port %d outside [%d, %d)", what, port, portPoolLow, hi)
		}
		if prev, ok := seen[port]; ok {
			t.Fatalf("%s: port %d already handed out (%s)", what, port, prev)
		}
		seen[port] = what
		if !blockHeld(port) {
			t.Fatalf("%s: the block of port %d is not held", what, port)
		}
	}
	for i := range 50 {
		inPool(t, fmt.Sprintf("FreeAddr #%d", i), portOf(t, FreeAddr(t)))
	}
	var first int
	t.Run("range", func(t *testing.T) {
		lo, hi := DynamicPortRange(t)
		if hi-lo+1 != devPortRangeSize {
			t.Fatalf("range %d-%d: %d ports, want %d", lo, hi, hi-lo+1, devPortRangeSize)
		}
		for p := lo; p <= hi; p++ {
			inPool(t, "DynamicPortRange", p)
		}
		first = lo
	})
	t.Run("reused after its test", func(t *testing.T) {
		if lo, _ := DynamicPortRange(t); lo != first {
			t.Fatalf("range from %d, want the released one from %d", lo, first)
		}
		if lo, _ := DynamicPortRange(t); lo == first {
			t.Fatalf("a range still in use (from %d) handed out again", lo)
		}
	})
}
