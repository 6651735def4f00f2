package slack

import (
	"context"
	"errors"
	"fmt"

	"github.com/slack-go/slack"
)

// A route or rule may name a channel that is gone, archived, or that the
// bot was never invited to. The notification must not be lost for it: it
// goes to the sink's default channel with a line saying where it was
// meant to go and why it is not there, and the operator is told (log and
// metric, through sinks.Misrouter).

// misrouted are Slack's answers that mean "not this channel", not "not
// this token": the default channel can still take the message.
var misrouted = map[string]string{
	"channel_not_found": "the channel does not exist, or the bot cannot see it (a private channel it is not in)",
	"not_in_channel":    "the bot is not in the channel: /invite the app there",
	"is_archived":       "the channel is archived",
}

// misroutedReason returns Slack's error code when err says the channel
// cannot take messages, "" otherwise.
func misroutedReason(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		if _, ok := misrouted[se.Err]; ok {
			return se.Err
		}
	}
	return ""
}

// postOrFallBack posts msg to channel; when Slack says that channel cannot
// take it and it is not the default one, it posts to the default channel
// instead, with a line saying why.
func (s *Sink) postOrFallBack(ctx context.Context, channel string, msg Message, opts ...slack.MsgOption) (string, string, error) {
	ch, ts, err := s.api.PostMessageContext(ctx, channel, append(msg.options(), opts...)...)
	if err == nil || channel == s.opts.Channel {
		return ch, ts, err
	}
	reason := misroutedReason(err)
	if reason == "" {
		return ch, ts, err
	}
	if s.misrouted != nil {
		s.misrouted(channel, reason)
	}
	line := fmt.Sprintf(":warning: Meant for %s, which Slack refused (%s: %s). Fix the route or the channel.", escape(channel), reason, misrouted[reason])
	msg.Blocks = append(msg.Blocks, slack.NewContextBlock("", mrkdwn(line)))
	return s.api.PostMessageContext(ctx, s.opts.Channel, append(msg.options(), opts...)...)
}
