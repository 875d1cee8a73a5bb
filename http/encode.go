package http

import (
	"encoding/json"

	lru "github.com/hashicorp/golang-lru/v2"
)

// storedObject marks a response that is an object as the state store holds
// it. The store never changes a stored object (a write stores a new one),
// so its JSON is encoded once and reused by every read of that object —
// 10,000 watchers woken by one write encode it once. The cache holds the
// object itself as its key, so the pointer cannot be reused for another
// object while its entry lives.
type storedObject struct{ obj any }

// encodeOnce answers obj, which must be a pointer to a stored object.
func encodeOnce(obj any) any {
	if obj == nil {
		return nil
	}
	return storedObject{obj}
}

// encodedObjects: the most recently encoded stored objects.
var encodedObjects = func() *lru.Cache[any, []byte] {
	c, err := lru.New[any, []byte](4096)
	if err != nil {
		panic(err)
	}
	return c
}()

// encodeStored returns obj's JSON, from the cache when it was encoded before.
func encodeStored(obj any) ([]byte, error) {
	if b, ok := encodedObjects.Get(obj); ok {
		return b, nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	encodedObjects.Add(obj, b)
	return b, nil
}
