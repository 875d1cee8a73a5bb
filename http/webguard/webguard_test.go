package webguard_test

import (
	"testing"

	"github.com/ctlplane/ctlplane/http/webguard"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost:8500": true, "127.0.0.1": true, "127.0.0.1:0": true, "127.255.1.2:80": true,
		"[::1]": true, "[::1]:8500": true, "::1": true,
		"": false, "evil.example": false, "evil.example:8500": false, "localhost.evil.example": false,
		"0.0.0.0:8500": false, "10.0.0.1:8500": false, "[::]:8500": false, "128.0.0.1": false, ":8500": false,
		"[::ffff:127.0.0.1]:1": true, "127.0.0.1.evil.example": false,
	} {
		if got := webguard.LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
