package client

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The mock driver (Nomad's mock_driver, alias mock) runs nothing: a task
// "runs" for run_for and exits with exit_code, on the client's Clock.
const (
	MockDriver      = "mock_driver"
	MockDriverAlias = "mock"
)

// mockConfig is a task's mock_driver Config, with Nomad's keys.
type mockConfig struct {
	// runFor: how long the task runs; unset (hasRunFor false): until stopped.
	runFor    time.Duration
	hasRunFor bool
	exitCode  int
	// exitErrMsg is the exit's message (Terminated event).
	exitErrMsg string
	// startError makes the start fail; recoverable starts go through the restart policy.
	startError            string
	startErrorRecoverable bool
	// startBlockFor delays the start.
	startBlockFor time.Duration
	// killAfter delays the kill.
	killAfter time.Duration
	stdout    string
}

// parseMockConfig reads a task's Config. Durations are Go duration strings
// or nanoseconds; unknown keys (other mock_driver options) are ignored.
func parseMockConfig(m map[string]any) (mockConfig, error) {
	var c mockConfig
	var err error
	for k, v := range m {
		switch k {
		case "run_for":
			c.runFor, err = durationOf(k, v)
			c.hasRunFor = true
		case "exit_code":
			c.exitCode, err = intOf(k, v)
		case "exit_err_msg":
			c.exitErrMsg, err = stringOf(k, v)
		case "start_error":
			c.startError, err = stringOf(k, v)
		case "start_error_recoverable":
			c.startErrorRecoverable, err = boolOf(k, v)
		case "start_block_for":
			c.startBlockFor, err = durationOf(k, v)
		case "kill_after":
			c.killAfter, err = durationOf(k, v)
		case "stdout_string":
			c.stdout, err = stringOf(k, v)
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

func durationOf(key string, v any) (time.Duration, error) {
	switch x := v.(type) {
	case string:
		d, err := time.ParseDuration(x)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%s: %q is not a duration", key, x)
		}
		return d, nil
	case float64:
		if x < 0 || x > math.MaxInt64 {
			return 0, fmt.Errorf("%s: %v is not a duration", key, x)
		}
		return time.Duration(x), nil
	case int:
		return time.Duration(x), nil
	case int64:
		return time.Duration(x), nil
	case uint64:
		return time.Duration(x), nil
	}
	return 0, fmt.Errorf("%s: a duration string or nanoseconds is needed, not %T", key, v)
}

func intOf(key string, v any) (int, error) {
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) {
			return 0, fmt.Errorf("%s: %v is not an integer", key, x)
		}
		return int(x), nil
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case uint64:
		return int(x), nil
	case string:
		n, err := strconv.Atoi(x)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not an integer", key, x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: an integer is needed, not %T", key, v)
}

func stringOf(key string, v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("%s: a string is needed, not %T", key, v)
}

func boolOf(key string, v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(x)
		if err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("%s: a boolean is needed", key)
}
