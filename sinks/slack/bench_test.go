package slack

import (
	"encoding/json"
	"testing"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/sinks"
)

// BenchmarkRender is the per-notification payload work of the Slack and
// webhook sinks: Block Kit blocks and their JSON, and the webhook/NATS
// payload and its JSON.
func BenchmarkRender(b *testing.B) {
	n := note(incident.Firing, 1, "5")
	b.Run("slack-blocks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msg := Render(n, "prod-eu", t0)
			if _, err := json.Marshal(msg.Blocks); err != nil || msg.Text == "" {
				b.Fatal(err)
			}
		}
	})
	b.Run("webhook-payload", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := sinks.NewPayload(n) // as the webhook and NATS sinks encode it
			body, err := p.AppendJSON(make([]byte, 0, 1024))
			if err != nil || len(body) == 0 {
				b.Fatal(err)
			}
		}
	})
}
