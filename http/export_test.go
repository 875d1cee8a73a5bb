package http

import "time"

// SetAuthMethodMinTTL lowers the least MaxTokenTTL an auth method may have,
// so that tests can watch login tokens expire; it returns the old value.
func SetAuthMethodMinTTL(d time.Duration) time.Duration {
	return time.Duration(authMethodMinTTL.Swap(int64(d)))
}
