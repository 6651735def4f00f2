// Package messagedoc holds the test that writes docs/messages.md: every
// kind of notification (oncalltest.Samples) as it reads in Slack, Teams
// and a terminal, rendered by the sinks themselves, so the page cannot
// drift from the code. Run `go test ./internal/messagedoc -update` after
// changing a message, and read the diff.
package messagedoc
