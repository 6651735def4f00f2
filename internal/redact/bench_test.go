package redact

import (
	"strings"
	"testing"
)

// benchFinding is what a crash-loop finding carries: title, text and the
// values of its facts, one with a Go panic as its termination message.
var benchFinding = []string{
	"CrashLoopBackOff: Pod shop/api-7d9f8b6c5-x2x9z container app",
	"CrashLoopBackOff: Pod shop/api-7d9f8b6c5-x2x9z container app: restarted 5 times, last exit code 1 (Error)",
	"5", "1", "Error", "waiting",
	"back-off 5m0s restarting failed container=app pod=api-7d9f8b6c5-x2x9z_shop(3f1c1e9a-7b61-4d7e-9a35-3c1f0e2b7d11)",
	"panic: failed to connect to database: dial tcp 10.0.3.4:5432: connect: connection refused\n\ngoroutine 1 [running]:\nmain.main()\n\t/app/main.go:42 +0x1d2\nexit status 2",
}

// benchTail is a crashed container's last 20 lines: JSON, klog, request
// logs and a Go panic, one line holding a password.
var benchTail = strings.Join([]string{
	`{"level":"info","ts":"2026-11-22T10:00:01.123Z","caller":"server/http.go:88","msg":"request","method":"GET","path":"/api/v1/orders/8b1f2c3d-4e5f-6071-8293-a4b5c6d7e8f9","status":200,"duration":"12.4ms","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`,
	`I1122 10:00:01.234567       1 controller.go:123] "Reconciled object" controller="order" namespace="shop" name="order-42" reconcileID="0f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0"`,
	`10.244.1.7 - - [22/Nov/2026:10:00:02 +0000] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.36"`,
	`{"level":"info","ts":"2026-11-22T10:00:02.500Z","msg":"cache hit","key":"user:1842:profile","ttl":300}`,
	`2026-11-22T10:00:03.001Z INFO  worker started pool=orders size=8 queue=orders.v1`,
	`2026-11-22T10:00:03.120Z DEBUG pulled image registry.example.com/shop/api@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08`,
	`2026-11-22T10:00:03.450Z INFO  build commit=3f2c9b1e8d7a6c5b4a3928170f6e5d4c3b2a1908 version=1.14.2`,
	`{"level":"warn","ts":"2026-11-22T10:00:04.010Z","msg":"slow query","query":"SELECT id, total FROM orders WHERE customer_id = $1 LIMIT 50","duration_ms":812}`,
	`10.244.1.9 - - [22/Nov/2026:10:00:04 +0000] "POST /api/v1/checkout HTTP/1.1" 201 512 "https://shop.example.com/cart" "Mozilla/5.0 (X11; Linux x86_64)"`,
	`2026-11-22T10:00:05.000Z INFO  connecting to database host=db.shop.svc port=5432 user=app password=Tr0ub4dor&3 sslmode=require`,
	`2026-11-22T10:00:05.200Z WARN  retrying in 200ms attempt=1 error="dial tcp 10.0.3.4:5432: connect: connection refused"`,
	`2026-11-22T10:00:05.600Z WARN  retrying in 400ms attempt=2 error="dial tcp 10.0.3.4:5432: connect: connection refused"`,
	`2026-11-22T10:00:06.400Z WARN  retrying in 800ms attempt=3 error="dial tcp 10.0.3.4:5432: connect: connection refused"`,
	`2026-11-22T10:00:08.000Z ERROR giving up after 3 attempts`,
	`panic: failed to connect to database: dial tcp 10.0.3.4:5432: connect: connection refused`,
	``,
	`goroutine 1 [running]:`,
	`main.main()`,
	`	/app/main.go:42 +0x1d2`,
	`exit status 2`,
}, "\n")

// BenchmarkRedact is the redactor's cost where herald runs it: on every
// text of a finding (now on the worker path), and on a crash-context log
// tail (20 lines, one with a password); and on a tail of a PEM key.
func BenchmarkRedact(b *testing.B) {
	r, _ := New(nil)
	b.Run("finding", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range benchFinding {
				_ = r.Redact(s)
			}
		}
	})
	b.Run("tail", func(b *testing.B) {
		if out := r.Redact(benchTail); strings.Contains(out, "Tr0ub4dor") || strings.Count(out, "\n") != 19 {
			b.Fatalf("the tail is not redacted as it should be:\n%s", out)
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = r.Redact(benchTail)
		}
	})
	b.Run("tail-with-key", func(b *testing.B) {
		tail := benchTail + "\n-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8Zl2ZkR4MxmYcKtQ3bM7nRtWx\n", 25) + "-----END RSA PRIVATE KEY-----"
		b.ReportAllocs()
		for b.Loop() {
			_ = r.Redact(tail)
		}
	})
}
