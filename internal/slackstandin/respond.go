package slackstandin

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// responseTarget is what a press's response_url acts on: the message whose
// button was pressed, and the user who pressed it (an ephemeral answer is
// for that user).
type responseTarget struct {
	channel, ts, user string
	uses              int
}

// maxResponseUses is how many times Slack lets an app use one response_url.
const maxResponseUses = 5

// serveResponseURL answers POST /actions/<team>/<envelope>, the
// response_url of a press. slack-go posts a JSON message there
// (MsgOptionResponseURL, MsgOptionReplaceOriginal, MsgOptionDeleteOriginal):
// replace_original edits the pressed message (an update, as chat.update
// would count it), delete_original removes it, and anything else is a new
// message — ephemeral for the presser unless response_type is "in_channel".
func (s *Server) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	var msg struct {
		Text            string          `json:"text"`
		ThreadTS        string          `json:"thread_ts"`
		Blocks          json.RawMessage `json:"blocks"`
		Metadata        json.RawMessage `json:"metadata"`
		ResponseType    string          `json:"response_type"`
		ReplaceOriginal bool            `json:"replace_original"`
		DeleteOriginal  bool            `json:"delete_original"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil || json.Unmarshal(body, &msg) != nil {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	blocks, meta := nonNull(msg.Blocks), nonNull(msg.Metadata)

	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEnvelope[id]
	if e == nil || r.Method != http.MethodPost {
		http.Error(w, "no_such_response_url", http.StatusNotFound)
		return
	}
	t := &e.respond
	if t.uses >= maxResponseUses {
		http.Error(w, "used_too_often", http.StatusNotFound)
		return
	}
	t.uses++
	key := messageKey(t.channel, t.ts)
	switch {
	case msg.DeleteOriginal:
		if s.byKey[key] == nil {
			http.Error(w, "message_not_found", http.StatusNotFound)
			return
		}
		for i, m := range s.messages {
			if m == s.byKey[key] {
				s.messages = append(s.messages[:i], s.messages[i+1:]...)
				break
			}
		}
		delete(s.byKey, key)
		s.opts.Logf("slackstandin: response_url deleted %s", key)
	case msg.ReplaceOriginal:
		m := s.byKey[key]
		if m == nil {
			http.Error(w, "message_not_found", http.StatusNotFound)
			return
		}
		m.Text, m.Blocks, m.Updates = msg.Text, blocks, m.Updates+1
		if meta != nil {
			m.Metadata = meta
		}
		s.opts.Logf("slackstandin: response_url replaced %s (update %d) %q", key, m.Updates, m.Text)
	default:
		m := &Message{Channel: t.channel, ThreadTS: msg.ThreadTS, Text: msg.Text, Blocks: blocks, Metadata: meta}
		m.TS = s.nextTSLocked()
		if msg.ResponseType != "in_channel" {
			m.Ephemeral, m.User = true, t.user
		} else {
			s.byKey[messageKey(m.Channel, m.TS)] = m
		}
		s.messages = append(s.messages, m)
		s.opts.Logf("slackstandin: response_url posted in %s (ephemeral %v) %q", m.Channel, m.Ephemeral, m.Text)
	}
	s.changedLocked()
	writeJSON(w, reply{"ok": true})
}

// nonNull treats a JSON null (slack-go's encoding of "no blocks") as absent.
func nonNull(r json.RawMessage) json.RawMessage {
	if s := strings.TrimSpace(string(r)); s == "" || s == "null" {
		return nil
	}
	return cloneRaw(r)
}
