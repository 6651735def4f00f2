package incident

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzLedgerDecode: whatever a ledger ConfigMap holds (hand-edited,
// truncated, from another version), decoding it either fails cleanly or
// gives incidents a tracker can restore, reconcile to resolution, and
// write back in a form that decodes again.
func FuzzLedgerDecode(f *testing.F) {
	f.Add(`[{"id":"fp-1","fingerprint":"fp","rule":"r","members":["Pod/shop/web"],"sinks":["out"],"pending":{"out":[{"transition":"firing","seq":1}]}}]`)
	f.Add(`[{"id":"a-2","fingerprint":"a","occurrence":2,"resolvedAt":"2026-11-22T00:00:00Z"},{"id":"","fingerprint":"x"}]`)
	f.Add(`[{"id":"x-1","fingerprint":"x","members":null,"facts":{"restartCount":"-9999999999999"},"seq":-3}]`)
	f.Add(`{"not":"a list"}`)
	f.Add(`[null, {}]`)
	f.Add(`[{"id":"g-1","fp":"g","grouped":true,"members":["Pod/shop/a"],"count":3000,"nMembers":3000,"sinks":["out"]}]`)
	f.Fuzz(func(t *testing.T, data string) {
		incs, _, err := decodeShard(data)
		if err != nil {
			return
		}
		clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
		tr := NewTracker(Options{Now: func() time.Time { return clock }, Retention: time.Hour})
		tr.Restore(incs)
		tr.Undelivered()
		for _, key := range tr.MemberKeys() {
			tr.Reconcile(key, nil) // every object gone: everything resolves
		}
		// As at start: the reconcile of every object is done, members
		// the ledger counted and nobody saw are gone, and the objects
		// kept for it are looked at again.
		tr.MembersSeen()
		for _, key := range tr.MemberKeys() {
			tr.Reconcile(key, nil)
		}
		if open := tr.Open(); open != 0 {
			t.Fatalf("%d incidents still open after every object was reconciled away", open)
		}
		snap, _ := tr.Snapshot()
		out, err := json.Marshal(snap)
		if err != nil {
			t.Fatalf("the restored ledger does not encode: %v", err)
		}
		if _, _, err := decodeShard(string(out)); err != nil {
			t.Fatalf("the ledger written back does not decode: %v", err)
		}
	})
}
