package redact

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// benignLines makes n realistic log lines that hold no secret: request
// logs, structured logs of controllers and services, error chains that
// speak of tokens and passwords, digests, hashes, UUIDs, pagination and
// language-model token counts — the same lines on every run.
func benignLines(n int) []string {
	rng := rand.New(rand.NewPCG(30, 1))
	hex := func(k int) string {
		const d = "0123456789abcdef"
		b := make([]byte, k)
		for i := range b {
			b[i] = d[rng.IntN(16)]
		}
		return string(b)
	}
	alnum := func(k int) string {
		const d = "abcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, k)
		for i := range b {
			b[i] = d[rng.IntN(len(d))]
		}
		return string(b)
	}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	uuid := func() string { return hex(8) + "-" + hex(4) + "-4" + hex(3) + "-a" + hex(3) + "-" + hex(12) }
	ip := func() string { return fmt.Sprintf("10.%d.%d.%d", rng.IntN(256), rng.IntN(256), 1+rng.IntN(254)) }
	ts := func() string {
		return fmt.Sprintf("2026-11-%02dT%02d:%02d:%02d.%03dZ", 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000))
	}
	ns := func() string { return pick("shop", "payments", "default", "kube-system", "monitoring", "auth") }
	pod := func() string { return pick("api", "web", "worker", "cart", "auth") + "-" + hex(9) + "-" + alnum(5) }
	path := func() string {
		return pick("/api/v1/orders/"+uuid(), "/api/v1/users/"+fmt.Sprint(rng.IntN(99999)), "/healthz", "/metrics",
			"/api/v1/tokens/"+uuid(), "/oauth/token", "/login", "/static/app."+hex(8)+".js", "/api/v2/search?q=red+shoes&page="+fmt.Sprint(rng.IntN(50)),
			"/reset-password?email=bob%40example.com", "/api/v1/sessions/"+uuid())
	}
	method := func() string { return pick("GET", "GET", "GET", "POST", "PUT", "DELETE") }
	status := func() string {
		return pick("200", "200", "200", "201", "204", "301", "400", "401", "403", "404", "500", "503")
	}
	dur := func() string { return fmt.Sprintf("%d.%dms", rng.IntN(900), rng.IntN(10)) }
	word := func() string {
		return pick("order", "payment", "cart", "user", "session", "invoice", "shipment", "token", "key", "secret", "password", "credential")
	}
	templates := []func() string{
		func() string {
			return fmt.Sprintf(`%s - - [22/Nov/2026:10:%02d:%02d +0000] "%s %s HTTP/1.1" %s %d "-" "Mozilla/5.0 (X11; Linux x86_64)"`, ip(), rng.IntN(60), rng.IntN(60), method(), path(), status(), rng.IntN(20000))
		},
		func() string {
			return fmt.Sprintf(`{"level":"info","ts":"%s","caller":"server/http.go:%d","msg":"request","method":"%s","path":"%s","status":%s,"duration":"%s","trace_id":"%s"}`, ts(), rng.IntN(400), method(), path(), status(), dur(), hex(32))
		},
		func() string {
			return fmt.Sprintf(`I1122 10:%02d:%02d.%06d       1 controller.go:%d] "Reconciled object" controller="%s" namespace="%s" name="%s" reconcileID="%s"`, rng.IntN(60), rng.IntN(60), rng.IntN(1000000), rng.IntN(500), word(), ns(), pod(), uuid())
		},
		func() string {
			return fmt.Sprintf("%s INFO  pulled image registry.example.com/%s/api@sha256:%s in %s", ts(), ns(), hex(64), dur())
		},
		func() string {
			return fmt.Sprintf("%s INFO  build commit=%s version=1.%d.%d go=go1.26.8", ts(), hex(40), rng.IntN(30), rng.IntN(10))
		},
		func() string {
			return fmt.Sprintf("%s ERROR failed to refresh %s: context deadline exceeded", ts(), pick("token", "credentials", "access token", "session key"))
		},
		func() string {
			return fmt.Sprintf("%s ERROR open /var/run/secrets/kubernetes.io/serviceaccount/token: no such file or directory", ts())
		},
		func() string {
			return fmt.Sprintf("%s WARN  invalid password for user %s from %s (attempt %d)", ts(), pick("bob", "alice", "carol"), ip(), 1+rng.IntN(5))
		},
		func() string {
			return fmt.Sprintf("%s INFO  password reset email sent to %s@example.com", ts(), pick("bob", "alice", "carol"))
		},
		func() string {
			return fmt.Sprintf(`%s ERROR token is expired: token: expired at %s`, ts(), ts())
		},
		func() string {
			return fmt.Sprintf("%s INFO  llm call model=gpt-4o prompt_tokens=%d completion_tokens=%d total_tokens=%d max_tokens=1024 tokenizer=o200k_base", ts(), rng.IntN(4000), rng.IntN(1000), rng.IntN(5000))
		},
		func() string {
			return fmt.Sprintf(`{"level":"debug","msg":"list","next_page_token":"%s","pageSize":100}`, alnum(32))
		},
		func() string {
			return fmt.Sprintf(`MountVolume.SetUp failed for volume "%s-creds" : secret "%s-creds" not found`, word(), word())
		},
		func() string {
			return fmt.Sprintf(`%s INFO  mounting secretName=%s-tls secretKeyRef=password password_file=/etc/%s/password token_path=/var/run/token`, ts(), ns(), ns())
		},
		func() string {
			return fmt.Sprintf("%s INFO  policy password_length=12 password_policy=strong token_ttl=3600 secret_version=%d", ts(), rng.IntN(20))
		},
		func() string {
			return fmt.Sprintf("%s DEBUG cache hit key=user:%d:cart ttl=300 keyspace=orders partition_key=%s", ts(), rng.IntN(100000), uuid())
		},
		func() string {
			return fmt.Sprintf(`%s WARN  slow query duration_ms=%d query="SELECT id, total FROM orders WHERE customer_id = $1 AND created_at > $2 LIMIT 50"`, ts(), 500+rng.IntN(3000))
		},
		func() string {
			return fmt.Sprintf("goroutine %d [running]:\nmain.(*Server).handle(0xc000%s, {0x%s, 0xc000%s})\n\t/app/server.go:%d +0x%s", 1+rng.IntN(200), hex(6), hex(6), hex(6), rng.IntN(900), hex(3))
		},
		func() string {
			return fmt.Sprintf("\tat com.example.shop.OrderService.place(OrderService.java:%d)", rng.IntN(900))
		},
		func() string {
			return fmt.Sprintf(`  File "/app/shop/views.py", line %d, in checkout`, rng.IntN(900))
		},
		func() string {
			return fmt.Sprintf("%s INFO  connected to https://api.example.com:8443/v1/orders?id=%d and http://%s:8080/users/bob@example.com", ts(), rng.IntN(1000), ip())
		},
		func() string {
			return fmt.Sprintf("%s INFO  cloning git@github.com:example/%s.git at %s into /src", ts(), word(), hex(40))
		},
		func() string {
			return fmt.Sprintf("+ docker run -d -p %d:80 -v /data:/data registry.example.com/%s:1.%d", 8000+rng.IntN(1000), word(), rng.IntN(9))
		},
		func() string {
			return fmt.Sprintf(`{"level":"warn","msg":"auth failed","reason":"unauthorized","user":"%s","request_id":"%s"}`, pick("bob", "svc-"+word()), uuid())
		},
		func() string {
			return fmt.Sprintf("%s INFO  using bearer token from /var/run/secrets/kubernetes.io/serviceaccount/token", ts())
		},
		func() string {
			return fmt.Sprintf("%s INFO  session started user=%d session=%d signal handlers installed", ts(), rng.IntN(9999), rng.IntN(9999))
		},
		func() string {
			return fmt.Sprintf("%s INFO  etag=%q resourceVersion=%d uid=%s", ts(), hex(16), rng.IntN(9999999), uuid())
		},
		func() string {
			return fmt.Sprintf("%s ERROR x509: certificate signed by unknown authority (possibly because of \"crypto/rsa: verification error\" while trying to verify candidate authority certificate \"%s-ca\")", ts(), ns())
		},
		func() string {
			return fmt.Sprintf("%s INFO  kafka offset=%d key=order-%d partition=%d topic=orders.v1", ts(), rng.IntN(1e7), rng.IntN(1e5), rng.IntN(12))
		},
		func() string {
			return fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", pick("app", "sidecar"), pod(), ns(), uuid())
		},
		func() string {
			return fmt.Sprintf("--- PASS: Test%s (0.%02ds)", strings.ToUpper(word()[:1])+word()[1:], rng.IntN(100))
		},
		func() string {
			return fmt.Sprintf("%s WARN  Password: must be at least 8 characters (user %s)", ts(), pick("bob", "alice"))
		},
		func() string {
			return fmt.Sprintf(`%s INFO  oauth config token_endpoint=https://auth.example.com/oauth/token client_id=shop-web grant_type=client_credentials token_type=bearer`, ts())
		},
		func() string {
			return fmt.Sprintf("%s INFO  rotating signing key kid=%s alg=RS256", ts(), hex(16))
		},
		func() string {
			return fmt.Sprintf(`%s INFO  config loaded {"password":"%s","token":null,"apiKey":"${API_KEY}","secret":"<hidden>"}`, ts(), pick("******", "[REDACTED]", "***"))
		},
		func() string {
			return fmt.Sprintf("%s INFO  image=%s/%s:%s digest=sha256:%s", ts(), "ghcr.io/example", word(), hex(7), hex(64))
		},
		func() string {
			return fmt.Sprintf("%s DEBUG http: TLS handshake error from %s:%d: EOF", ts(), ip(), 30000+rng.IntN(30000))
		},
		func() string {
			return fmt.Sprintf("%s INFO  %s %s %s %s user_agent=\"kube-probe/1.36\"", ts(), method(), path(), status(), dur())
		},
		func() string {
			return fmt.Sprintf("%s ERROR rpc error: code = Unauthenticated desc = invalid token: %s", ts(), pick("token is malformed", "signature is invalid", "token has expired"))
		},
		func() string {
			return fmt.Sprintf("%s INFO  OOM score adj=%d memory.limit=%dMi pids=%d", ts(), rng.IntN(1000), 128*(1+rng.IntN(16)), rng.IntN(400))
		},
	}
	lines := make([]string, n)
	for i := range lines {
		lines[i] = strings.ReplaceAll(templates[rng.IntN(len(templates))](), "\n", " ")
	}
	return lines
}
