package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/herald-k8s/herald/internal/slackstandin"
)

// The demo's Slack: a stand-in on loopback (internal/slackstandin) that
// speaks the Web API and Socket Mode, so herald's messages and buttons
// work as with Slack, and the demo can press a button as a person would.
const (
	slackPlaceholder = "http://127.0.0.1:9094/api/"
	onCall           = "U0ONCALL1" // the on-call engineer examples/demo.yaml lets silence
)

// startSlack starts the stand-in and points the configuration's Slack
// sink at it (a copy of configPath).
func startSlack(configPath string) (*slackstandin.Server, string, error) {
	sl, err := slackstandin.Start(slackstandin.Options{Users: map[string]string{onCall: "ana"}})
	if err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(configPath)
	if err != nil {
		return nil, "", err
	}
	if !strings.Contains(string(data), slackPlaceholder) {
		return nil, "", fmt.Errorf("%s has no slack sink at %s", configPath, slackPlaceholder)
	}
	out := strings.TrimSuffix(configPath, ".yaml") + "-slack.yaml"
	return sl, out, os.WriteFile(out, []byte(strings.ReplaceAll(string(data), slackPlaceholder, sl.URL()+"/api/")), 0o600)
}

// buttonScene presses a button of web's Slack alert: Silence 1 h, as the
// on-call engineer. herald creates a Silence (herald silence list shows
// it, created by slack:U0ONCALL1 (ana)), says so in the alert's thread,
// and edits the alert to say who muted it and until when.
func buttonScene(ctx context.Context, sl *slackstandin.Server, heraldBin, kubeconfig string, lines <-chan string, seen func([]string)) error {
	var alert slackstandin.Message
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := sl.WaitFor(wait, func(s *slackstandin.Server) bool {
		for _, m := range s.Messages() {
			if m.ThreadTS == "" && strings.Contains(m.Text, "demo/web") && strings.Contains(string(m.Blocks), "herald_silence_1h") {
				alert = m
				return true
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("no Slack alert with buttons for demo/web: %w", err)
	}
	say("web's alert in Slack carries buttons: %s. The on-call engineer (ana) presses Silence 1 h; herald, over Socket Mode (no ingress), creates a Silence for exactly this incident", buttons(alert.Blocks))
	env, err := sl.Press(wait, slackstandin.Press{Channel: alert.Channel, TS: alert.TS, ActionID: "herald_silence_1h", User: onCall})
	if err != nil {
		return err
	}
	if err := sl.WaitAcked(wait, env); err != nil {
		return fmt.Errorf("herald did not answer the press: %w", err)
	}
	for _, r := range sl.Replies(alert.Channel, alert.TS) {
		fmt.Printf("    \033[35mslack thread>\033[0m %s\n", r.Text)
	}
	list, err := exec.Command(heraldBin, "silence", "list", "--kubeconfig", kubeconfig, "--namespace", ns).CombinedOutput()
	fmt.Printf("    %s", strings.ReplaceAll(strings.TrimRight(string(list), "\n"), "\n", "\n    ")+"\n")
	if err != nil {
		return fmt.Errorf("herald silence list: %w", err)
	}
	if err := expect(lines, seen, 30*time.Second, "SILENCED", "demo/web", "slack:"+onCall); err != nil {
		return err
	}
	var edited slackstandin.Message
	err = sl.WaitFor(wait, func(s *slackstandin.Server) bool {
		edited, _ = s.Message(alert.Channel, alert.TS)
		return strings.Contains(string(edited.Blocks), "herald_unsilence")
	})
	if err != nil {
		return fmt.Errorf("the Slack alert was not edited to say it is muted: %w", err)
	}
	say("the alert in Slack, edited in place: %s; its one button now: %s", firstSection(edited.Blocks), buttons(edited.Blocks))
	return nil
}

// buttons lists the buttons' labels in a message's blocks.
func buttons(raw json.RawMessage) string {
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type string `json:"type"`
			Text struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"elements"`
	}
	json.Unmarshal(raw, &blocks)
	var out []string
	for _, b := range blocks {
		for _, e := range b.Elements {
			if b.Type == "actions" && e.Type == "button" {
				out = append(out, "["+e.Text.Text+"]")
			}
		}
	}
	return strings.Join(out, " ")
}

// firstSection is the text of a message's first section (its lead).
func firstSection(raw json.RawMessage) string {
	var blocks []struct {
		Type string `json:"type"`
		Text struct {
			Text string `json:"text"`
		} `json:"text"`
	}
	json.Unmarshal(raw, &blocks)
	for _, b := range blocks {
		if b.Type == "section" && b.Text.Text != "" {
			return strings.ReplaceAll(b.Text.Text, "\n", " / ")
		}
	}
	return ""
}
