package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/sinks"
)

func note() incident.Notification {
	return incident.Notification{
		Incident: incident.Incident{
			ID: "abc-1", Fingerprint: "abc", Rule: "pod-crashloop", Severity: "critical", Reason: "CrashLoopBackOff",
			Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web", UID: "u1"}, Container: "app",
			Title: "t", Text: "x", Sinks: []string{"hook"},
		},
		Transition: incident.Firing, Seq: 1, Time: time.Unix(0, 0),
	}
}

func TestSendStatuses(t *testing.T) {
	tests := []struct {
		status     int
		retryAfter string
		wantErr    bool
		retryable  bool
		after      time.Duration
	}{
		{200, "", false, false, 0},
		{204, "", false, false, 0},
		{503, "", true, true, 0},
		{429, "2", true, true, 2 * time.Second},
		{400, "", true, false, 0},
		{404, "", true, false, 0},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			var got sinks.Payload
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Team") != "sre" || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("webhook-id") != "abc-1-1" ||
					r.Header.Get("Herald-Replica") != "herald-0_ABCD1234" || r.Header.Get("Herald-Epoch") != "7.3" {
					t.Errorf("headers: %v", r.Header)
				}
				json.NewDecoder(r.Body).Decode(&got)
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			secretURL := srv.URL + "/services/T000/B000/s3cr3t-token"
			s, err := New(Options{Name: "hook", URL: secretURL, Timeout: time.Second, Headers: map[string]string{"X-Team": "sre"}, Replica: "herald-0_ABCD1234"})
			if err != nil {
				t.Fatal(err)
			}
			// The leader's term: the Lease's 7th transition, the ledger's
			// 3rd claim.
			err = s.Send(fence.WithEpoch(context.Background(), fence.Epoch{LeaseTransitions: 7, Ledger: 3}), note())
			if (err != nil) != tt.wantErr {
				t.Fatalf("Send error = %v, wantErr %v", err, tt.wantErr)
			}
			if got.Version != sinks.PayloadVersion || got.ID != "abc-1-1" || got.Object.Name != "web" || got.Container != "app" || got.Epoch != "7.3" {
				t.Errorf("payload received: %+v", got)
			}
			if err == nil {
				return
			}
			retry, after := sinks.IsRetryable(err)
			if retry != tt.retryable || after != tt.after {
				t.Errorf("IsRetryable = %v, %s; want %v, %s", retry, after, tt.retryable, tt.after)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error leaks the URL's secret: %v", err)
			}
		})
	}
}

func TestSendUnreachableIsRetryableAndRedacted(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/hook?token=s3cr3t"
	srv.Close() // nothing listens there any more
	s, err := New(Options{Name: "hook", URL: url, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), note())
	if retry, _ := sinks.IsRetryable(err); err == nil || !retry {
		t.Fatalf("Send to a closed port: %v, want a retryable error", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error leaks the URL's secret: %v", err)
	}
}

// TestNewRefusesAnAddressWithoutHost: an address without scheme or host
// (say, read from a secret without its https://) fails at start, naming
// the sink and not the address, rather than at every send.
func TestNewRefusesAnAddressWithoutHost(t *testing.T) {
	_, err := New(Options{Name: "hook", URL: "hooks.example.com/T0k3n", Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "webhook hook") || strings.Contains(err.Error(), "T0k3n") {
		t.Fatalf("New with a host-less URL: %v; want an error naming the sink, not the URL", err)
	}
}
