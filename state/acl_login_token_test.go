package state

import (
	"errors"
	"testing"
)

// TestACLTokenCreateNeedsItsAuthMethod: a token that names an auth method
// is only created while that method exists (any case), so that a login
// racing the method's deletion cannot leave a token the cascade missed.
func TestACLTokenCreateNeedsItsAuthMethod(t *testing.T) {
	s := NewStore()
	tok := newToken(idA, "secret-a")
	tok.AuthMethod = "jwt"
	_, err := s.ACLTokenSet(2, tok, true)
	var se *Error
	if !errors.As(err, &se) || se.Code != ErrNotFound || se.Msg != `auth method "jwt" not found` {
		t.Fatalf("token of a missing method: %v", err)
	}
	if _, got, _ := s.ACLTokenByAccessor(nil, idA); got != nil {
		t.Fatal("the refused token was stored")
	}
	withMethods(t, s, 3, "JWT")
	if _, err := s.ACLTokenSet(4, tok, true); err != nil {
		t.Fatalf("token of an existing method: %v", err)
	}
	// The method goes, and its token with it.
	if err := s.ACLAuthMethodDelete(5, "jwt"); err != nil {
		t.Fatal(err)
	}
	if _, got, _ := s.ACLTokenByAccessor(nil, idA); got != nil {
		t.Fatal("the method's token outlived it")
	}
	// Tokens without a method are not affected.
	if _, err := s.ACLTokenSet(6, newToken(idB, "secret-b"), true); err != nil {
		t.Fatal(err)
	}
}
