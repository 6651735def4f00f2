package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const intakeBase = `rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [chat]}
sinks:
  - {name: chat, stdout: {}}
`

// TestIntake: a receiver with a token file decodes with its defaults;
// one that would take in unauthenticated alerts, or is wrong otherwise,
// is refused at file:line:col, saying what to do.
func TestIntake(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("good.yaml", []byte(intakeBase+`intake:
  alertmanager:
    token: {file: `+token+`}
    objects: [{alertname: QueueBacklog, kind: Deployment, nameLabel: app}]
    agree: {MyCrash: CrashLoopBackOff}
    repeat: 4h
    maxBodyBytes: 65536
    sinks: [chat]
routes:
  - {name: slo, match: {rules: [alertmanager]}, to: [{sink: chat}]}
`))
	if err != nil {
		t.Fatalf("a good receiver is refused: %v", err)
	}
	in := cfg.Intake.Alertmanager
	if in.Listen != ":9094" || in.MaxBodyBytes != 65536 || in.Repeat != 4*time.Hour || in.Sinks[0] != "chat" || in.Token.Secret().Reveal() != "t0ken" || in.Objects[0].NamespaceLabel != "namespace" {
		t.Errorf("defaults: %+v", in)
	}
	if in.AgreeFor("MyCrash") != "CrashLoopBackOff" || in.AgreeFor("KubePodCrashLooping") != "CrashLoopBackOff" || in.AgreeFor("Other") != "" {
		t.Errorf("agree: %q %q %q", in.AgreeFor("MyCrash"), in.AgreeFor("KubePodCrashLooping"), in.AgreeFor("Other"))
	}

	for _, tc := range []struct{ name, intake, want string }{
		{"no authentication", `{listen: ":9094"}`, `bad.yaml:6:17: intake.alertmanager: needs token`},
		{"bad listen", `{listen: "9094", token: {file: ` + token + `}}`, `intake.alertmanager.listen: must be host:port`},
		{"missing token file", `{token: {file: /nonexistent/token}}`, `intake.alertmanager.token.file: cannot read the secret`},
		{"body cap", `{token: {file: ` + token + `}, maxBodyBytes: 10}`, `intake.alertmanager.maxBodyBytes: must be between 1 KiB and 64 MiB`},
		{"unknown sink", `{token: {file: ` + token + `}, sinks: [mail]}`, `intake.alertmanager.sinks[0]: no sink is named "mail"`},
		{"bad kind", `{token: {file: ` + token + `}, objects: [{alertname: X, kind: Widget, nameLabel: app}]}`, `intake.alertmanager.objects[0].kind: must be one of`},
		{"bad label", `{token: {file: ` + token + `}, objects: [{alertname: X, kind: Pod, nameLabel: "a-b"}]}`, `intake.alertmanager.objects[0].nameLabel: "a-b" is not a Prometheus label name`},
		{"tls without key", `{tls: {certFile: ` + token + `, clientCAFile: ` + token + `}}`, `intake.alertmanager.tls: needs certFile and keyFile`},
		{"unknown field", `{token: {file: ` + token + `}, port: 9094}`, `port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(intakeBase+"intake:\n  alertmanager: "+tc.intake+"\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	_, err = Parse("bad.yaml", []byte(strings.Replace(intakeBase, "name: crash", "name: alertmanager", 1)+"intake:\n  alertmanager: {token: {file: "+token+"}}\n"))
	if err == nil || !strings.Contains(err.Error(), `rules[0].name: "alertmanager" names the incidents of the alerts taken in`) {
		t.Errorf("a rule named alertmanager beside the receiver: %v", err)
	}
}
