package actions

import "sync"

// keyedLock is a mutex per key, kept while anyone holds or waits for it.
type keyedLock struct {
	mu   sync.Mutex
	keys map[string]*keyedEntry
}

type keyedEntry struct {
	sync.Mutex
	users int
}

// lock locks key and returns its unlock.
func (k *keyedLock) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.keys == nil {
		k.keys = map[string]*keyedEntry{}
	}
	e := k.keys[key]
	if e == nil {
		e = &keyedEntry{}
		k.keys[key] = e
	}
	e.users++
	k.mu.Unlock()
	e.Lock()
	return func() {
		e.Unlock()
		k.mu.Lock()
		if e.users--; e.users == 0 {
			delete(k.keys, key)
		}
		k.mu.Unlock()
	}
}
