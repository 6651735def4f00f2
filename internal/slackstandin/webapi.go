package slackstandin

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// params are a Web API call's arguments. slack-go sends most methods as a
// form (with the token as a "token" field and JSON-valued arguments such as
// blocks as JSON strings) and some as a JSON body with the token in the
// Authorization header; Slack accepts both, so the stand-in does too.
type params struct {
	form url.Values
	json map[string]json.RawMessage
}

func readParams(r *http.Request) (params, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			return params{}, err
		}
		p := params{json: map[string]json.RawMessage{}}
		if len(strings.TrimSpace(string(body))) > 0 {
			if err := json.Unmarshal(body, &p.json); err != nil {
				return params{}, err
			}
		}
		return p, nil
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 4<<20)
	if err := r.ParseForm(); err != nil {
		return params{}, err
	}
	return params{form: r.Form}, nil
}

// str returns the argument as a string and whether it was given at all.
func (p params) str(key string) (string, bool) {
	if p.json != nil {
		raw, ok := p.json[key]
		if !ok {
			return "", false
		}
		var v string
		if json.Unmarshal(raw, &v) == nil {
			return v, true
		}
		return string(raw), true
	}
	if _, ok := p.form[key]; !ok {
		return "", false
	}
	return p.form.Get(key), true
}

func (p params) get(key string) string { v, _ := p.str(key); return v }

// raw returns a JSON-valued argument (blocks, metadata) as JSON, whether it
// came as a JSON value or as a JSON string in a form. ok is false when the
// argument is absent; err when it is present but not JSON.
func (p params) raw(key string) (v json.RawMessage, ok bool, err error) {
	if p.json != nil {
		r, ok := p.json[key]
		if !ok {
			return nil, false, nil
		}
		var s string
		if json.Unmarshal(r, &s) != nil {
			return cloneRaw(r), true, nil // already a JSON value
		}
		return checkJSON(s)
	}
	s, ok := p.str(key)
	if !ok {
		return nil, false, nil
	}
	return checkJSON(s)
}

func checkJSON(s string) (json.RawMessage, bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, true, nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, true, err
	}
	return json.RawMessage(s), true, nil
}

// token is the caller's token: the Authorization header, or else the
// "token" argument (slack-go's form-encoded methods put it there).
func token(r *http.Request, p params) string {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if tok, ok := strings.CutPrefix(h, "Bearer"); ok && strings.TrimSpace(tok) != "" {
		return strings.TrimSpace(tok)
	}
	return p.get("token")
}

// reply is a Web API answer. Slack answers 200 with "ok" either way.
type reply map[string]any

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(code string) reply { return reply{"ok": false, "error": code} }

// authError checks the token against the kind a method needs and names
// the error Slack gives: none at all is not_authed, one of the other kind
// is not_allowed_token_type (an app-level token cannot post, a bot token
// cannot open a socket), a wrong one is invalid_auth.
func authError(tok, prefix, want string) string {
	switch {
	case tok == "":
		return "not_authed"
	case strings.HasPrefix(tok, prefix):
		if want != "" && tok != want {
			return "invalid_auth"
		}
		return ""
	case strings.HasPrefix(tok, "xapp-"), strings.HasPrefix(tok, "xoxb-"), strings.HasPrefix(tok, "xoxp-"):
		return "not_allowed_token_type"
	}
	return "invalid_auth"
}

// serveAPI answers POST /api/<method>.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	p, err := readParams(r)
	if err != nil {
		writeJSON(w, fail("invalid_form_data"))
		return
	}
	tok := token(r, p)
	if method == "apps.connections.open" {
		if code := authError(tok, "xapp-", s.opts.AppToken); code != "" {
			s.opts.Logf("slackstandin: %s refused: %s", method, code)
			writeJSON(w, fail(code))
			return
		}
		writeJSON(w, s.openConnection())
		return
	}
	h, ok := s.methods()[method]
	if !ok {
		writeJSON(w, fail("unknown_method"))
		return
	}
	if code := authError(tok, "xoxb-", s.opts.BotToken); code != "" {
		s.opts.Logf("slackstandin: %s refused: %s", method, code)
		writeJSON(w, fail(code))
		return
	}
	writeJSON(w, h(p))
}

func (s *Server) methods() map[string]func(params) reply {
	return map[string]func(params) reply{
		"auth.test":             s.authTest,
		"chat.postMessage":      s.postMessage,
		"chat.update":           s.update,
		"chat.postEphemeral":    s.postEphemeral,
		"users.info":            s.usersInfo,
		"usergroups.users.list": s.usergroupUsers,
	}
}

// openConnection issues a single-use WebSocket URL, as Slack does: every
// (re)connection asks apps.connections.open for a new one.
func (s *Server) openConnection() reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fail("internal_error")
	}
	ticket := s.nextIDLocked("tk")
	s.tickets[ticket] = true
	return reply{"ok": true, "url": "ws" + strings.TrimPrefix(s.url, "http") + "/link/?ticket=" + ticket}
}

func (s *Server) authTest(params) reply {
	return reply{"ok": true, "url": s.url + "/", "team": TeamDomain, "user": BotName,
		"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}
}

func (s *Server) postMessage(p params) reply {
	m, code := messageFromParams(p)
	if code != "" {
		return fail(code)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m.TS = s.nextTSLocked()
	if m.ThreadTS != "" && s.byKey[messageKey(m.Channel, m.ThreadTS)] == nil {
		s.opts.Logf("slackstandin: reply in %s to unknown thread %s", m.Channel, m.ThreadTS)
	}
	s.messages = append(s.messages, m)
	s.byKey[messageKey(m.Channel, m.TS)] = m
	s.changedLocked()
	s.opts.Logf("slackstandin: chat.postMessage %s ts=%s thread=%s %q", m.Channel, m.TS, m.ThreadTS, m.Text)
	return reply{"ok": true, "channel": m.Channel, "ts": m.TS, "message": messageJSON(m)}
}

func (s *Server) postEphemeral(p params) reply {
	m, code := messageFromParams(p)
	if code != "" {
		return fail(code)
	}
	m.Ephemeral, m.User = true, p.get("user")
	if m.User == "" {
		return fail("invalid_arguments")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m.TS = s.nextTSLocked()
	s.messages = append(s.messages, m)
	s.changedLocked()
	s.opts.Logf("slackstandin: chat.postEphemeral %s for %s %q", m.Channel, m.User, m.Text)
	return reply{"ok": true, "message_ts": m.TS}
}

// update edits a message in place. Like Slack, it replaces only what the
// call names: absent blocks or metadata keep the message's previous ones.
func (s *Server) update(p params) reply {
	channel, ts := p.get("channel"), p.get("ts")
	if channel == "" {
		return fail("channel_not_found")
	}
	blocks, hasBlocks, err := p.raw("blocks")
	if err != nil {
		return fail("invalid_blocks")
	}
	meta, hasMeta, err := p.raw("metadata")
	if err != nil {
		return fail("invalid_metadata")
	}
	text, hasText := p.str("text")
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.byKey[messageKey(channel, ts)]
	if m == nil {
		return fail("message_not_found")
	}
	if hasText {
		m.Text = text
	}
	if hasBlocks {
		m.Blocks = blocks
	}
	if hasMeta {
		m.Metadata = meta
	}
	m.Updates++
	s.changedLocked()
	s.opts.Logf("slackstandin: chat.update %s ts=%s (update %d) %q", channel, ts, m.Updates, m.Text)
	return reply{"ok": true, "channel": channel, "ts": ts, "text": m.Text, "message": messageJSON(m)}
}

// messageFromParams reads the arguments chat.postMessage and
// chat.postEphemeral share, refusing what Slack refuses: no channel, or
// neither text nor blocks.
func messageFromParams(p params) (*Message, string) {
	m := &Message{Channel: p.get("channel"), ThreadTS: p.get("thread_ts"), Text: p.get("text")}
	if m.Channel == "" {
		return nil, "channel_not_found"
	}
	var err error
	if m.Blocks, _, err = p.raw("blocks"); err != nil {
		return nil, "invalid_blocks"
	}
	if m.Metadata, _, err = p.raw("metadata"); err != nil {
		return nil, "invalid_metadata"
	}
	if m.Text == "" && len(m.Blocks) == 0 {
		return nil, "no_text"
	}
	return m, ""
}

// messageJSON is a stored message as Slack shows it in API answers and in
// interaction payloads: from the bot, with its blocks and metadata.
func messageJSON(m *Message) map[string]any {
	out := map[string]any{"type": "message", "user": BotUserID, "bot_id": BotID, "app_id": AppID,
		"team": TeamID, "text": m.Text, "ts": m.TS}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if len(m.Blocks) > 0 {
		out["blocks"] = cloneRaw(m.Blocks)
	}
	if len(m.Metadata) > 0 {
		out["metadata"] = cloneRaw(m.Metadata)
	}
	return out
}

func (s *Server) usersInfo(p params) reply {
	id := p.get("user")
	name, ok := s.opts.Users[id]
	if !ok {
		return fail("user_not_found")
	}
	return reply{"ok": true, "user": userJSON(id, name)}
}

func userJSON(id, name string) map[string]any {
	return map[string]any{"id": id, "team_id": TeamID, "name": name, "real_name": name,
		"profile": map[string]any{"display_name": name, "real_name": name}}
}

func (s *Server) usergroupUsers(p params) reply {
	members, ok := s.opts.Groups[p.get("usergroup")]
	if !ok {
		return fail("no_such_subteam")
	}
	return reply{"ok": true, "users": append([]string{}, members...)}
}
