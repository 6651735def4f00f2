package slackstandin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestWebAPI(t *testing.T) {
	s := start(t, time.Hour)
	api := client(s, botToken, appToken)
	ts := postAlert(t, api)

	_, ts2, err := api.PostMessage(channel, slack.MsgOptionText("more restarts", false), slack.MsgOptionTS(ts))
	if err != nil {
		t.Fatal(err)
	}
	if ts2 <= ts {
		t.Errorf("ts not increasing: %s then %s", ts, ts2)
	}
	if r := s.Replies(channel, ts); len(r) != 1 || r[0].TS != ts2 || r[0].Text != "more restarts" {
		t.Errorf("replies: %+v", r)
	}

	// chat.update replaces what it names and keeps the rest.
	if _, _, _, err := api.UpdateMessage(channel, ts, slack.MsgOptionText("RESOLVED web-0", false)); err != nil {
		t.Fatal(err)
	}
	m, ok := s.Message(channel, ts)
	if !ok || m.Text != "RESOLVED web-0" || m.Updates != 1 || !strings.Contains(string(m.Blocks), `"silence_1h"`) {
		t.Errorf("after chat.update: %+v", m)
	}
	if !strings.Contains(string(m.Metadata), `"fp1"`) {
		t.Errorf("metadata %s", m.Metadata)
	}
	if _, _, _, err := api.UpdateMessage(channel, ts, slack.MsgOptionBlocks()); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Message(channel, ts); m.Updates != 2 || string(m.Blocks) != "[]" {
		t.Errorf("after clearing blocks: %d updates, blocks %s", m.Updates, m.Blocks)
	}
	if _, _, _, err := api.UpdateMessage(channel, "1.000001", slack.MsgOptionText("x", false)); err == nil || err.Error() != "message_not_found" {
		t.Errorf("update of an unknown message: %v", err)
	}

	ets, err := api.PostEphemeral(channel, "U2", slack.MsgOptionText("silenced for 1 h", false))
	if err != nil {
		t.Fatal(err)
	}
	if e := s.Ephemerals("U2"); len(e) != 1 || e[0].TS != ets || e[0].Text != "silenced for 1 h" || !e[0].Ephemeral {
		t.Errorf("ephemerals: %+v", e)
	}
	if n := len(s.Messages()); n != 3 {
		t.Errorf("%d messages, want 3 (alert, reply, ephemeral)", n)
	}

	u, err := api.GetUserInfo("U1")
	if err != nil || u.ID != "U1" || u.Name != "alice" || u.Profile.DisplayName != "alice" {
		t.Errorf("users.info: %+v, %v", u, err)
	}
	if _, err := api.GetUserInfo("U404"); err == nil || err.Error() != "user_not_found" {
		t.Errorf("users.info of an unknown user: %v", err)
	}
	members, err := api.GetUserGroupMembers("S1")
	if err != nil || strings.Join(members, ",") != "U1,U2" {
		t.Errorf("usergroups.users.list: %v, %v", members, err)
	}
	if _, err := api.GetUserGroupMembers("S404"); err == nil || err.Error() != "no_such_subteam" {
		t.Errorf("usergroups.users.list of an unknown group: %v", err)
	}
	at, err := api.AuthTest()
	if err != nil || at.UserID != BotUserID || at.BotID != BotID || at.TeamID != TeamID {
		t.Errorf("auth.test: %+v, %v", at, err)
	}
}

func TestTokens(t *testing.T) {
	s := start(t, time.Hour)
	for _, tc := range []struct {
		name, bot, app, want string
		call                 func(*slack.Client) error
	}{
		{"bot token opens a socket", botToken, botToken, "not_allowed_token_type", openSocket},
		{"wrong app token", botToken, "xapp-wrong", "invalid_auth", openSocket},
		{"no app token", botToken, "", "not_authed", openSocket},
		{"app token posts", appToken, appToken, "not_allowed_token_type", post},
		{"wrong bot token", "xoxb-wrong", appToken, "invalid_auth", post},
		{"no bot token", "", appToken, "not_authed", post},
		{"right tokens post", botToken, appToken, "", post},
		{"right tokens open a socket", botToken, appToken, "", openSocket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(client(s, tc.bot, tc.app))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}

	resp, err := http.PostForm(s.URL()+"/api/chat.scheduleMessage", url.Values{"token": {botToken}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.OK || r.Error != "unknown_method" {
		t.Errorf("unknown method: %+v, %v", r, err)
	}
}

func openSocket(c *slack.Client) error {
	_, _, err := c.StartSocketModeContext(context.Background())
	return err
}
func post(c *slack.Client) error {
	_, _, err := c.PostMessage(channel, slack.MsgOptionText("x", false))
	return err
}
