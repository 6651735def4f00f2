package sinks

import (
	"github.com/herald-k8s/herald/internal/incident"
)

// appendChanges appends c as json.Marshal writes an incident.Changes: its
// fields in order, omitempty where its tags say, a nil Lines as null (the
// field is not omitempty). Part of AppendJSON, held to encoding/json's
// bytes by the same test.
func appendChanges(b []byte, c *incident.Changes) ([]byte, error) {
	var err error
	b = append(b, `{"workload":`...)
	b = appendString(b, c.Workload)
	b = append(b, `,"since":`...)
	if b, err = appendTime(b, c.Since); err != nil {
		return nil, err
	}
	b = append(b, `,"at":`...)
	if b, err = appendTime(b, c.At); err != nil {
		return nil, err
	}
	if len(c.Rollouts) > 0 {
		b = append(b, `,"rollouts":[`...)
		for i := range c.Rollouts {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendRollout(b, &c.Rollouts[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	b = appendOptional(b, `,"undo":`, c.Undo)
	if len(c.Objects) > 0 {
		b = append(b, `,"objects":[`...)
		for i := range c.Objects {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendObjectChange(b, &c.Objects[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"lines":`...)
	b = appendStrings(b, c.Lines)
	return append(b, '}'), nil
}

func appendRollout(b []byte, r *incident.Rollout) ([]byte, error) {
	var err error
	b = append(b, '{')
	if r.Revision != "" {
		b = append(b, `"revision":`...)
		b = appendString(b, r.Revision)
		b = append(b, ',')
	}
	b = append(b, `"at":`...)
	if b, err = appendTime(b, r.At); err != nil {
		return nil, err
	}
	b = appendOptional(b, `,"by":`, r.By)
	if len(r.Items) > 0 {
		b = appendStrings(append(b, `,"items":`...), r.Items)
	}
	b = append(b, `,"known":`...)
	if r.Known {
		b = append(b, "true"...)
	} else {
		b = append(b, "false"...)
	}
	b = appendOptional(b, `,"changeCause":`, r.ChangeCause)
	if len(r.Tools) > 0 {
		b = appendStrings(append(b, `,"tools":`...), r.Tools)
	}
	return append(b, '}'), nil
}

func appendObjectChange(b []byte, o *incident.ObjectChange) ([]byte, error) {
	var err error
	b = append(b, `{"kind":`...)
	b = appendString(b, o.Kind)
	b = append(b, `,"name":`...)
	b = appendString(b, o.Name)
	b = append(b, `,"at":`...)
	if b, err = appendTime(b, o.At); err != nil {
		return nil, err
	}
	if o.Created {
		b = append(b, `,"created":true`...)
	}
	if o.MetaToo {
		b = append(b, `,"metaToo":true`...)
	}
	if len(o.AlsoFailing) > 0 {
		b = appendStrings(append(b, `,"alsoFailing":`...), o.AlsoFailing)
	}
	return append(b, '}'), nil
}

// appendStrings appends ss as a JSON array, or null when it is nil (as
// encoding/json writes a nil slice).
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}
