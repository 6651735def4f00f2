package kube

// Lists and watches whose objects are decoded by the caller, into the
// type it caches, straight from their protobuf: herald caches pods in a
// compact form, and decoding each whole corev1.Pod first cost more CPU
// than anything else per watch event (issue #17).

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// List is a list whose items ListerWatcherDecoding's decode made.
type List struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
}

// DeepCopyObject copies the list and its items.
func (l *List) DeepCopyObject() runtime.Object {
	out := &List{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]runtime.Object, len(l.Items))
	for i, it := range l.Items {
		out.Items[i] = it.DeepCopyObject()
	}
	return out
}

// ListerWatcherDecoding lists and watches resource gvr, whose objects are
// of kind, and decodes every object (of a list page or a watch event)
// with decode, from its protobuf message (the object's own fields,
// without the "k8s\x00" envelope; decode must not keep raw, whose memory
// is reused); lists are Lists. Everything else the API server sends (a
// Status, an error) decodes as usual. It asks for protobuf only: an
// answer in another encoding is an error, not an object of another type.
func (c *Client) ListerWatcherDecoding(gvr schema.GroupVersionResource, kind string, decode func(raw []byte) (runtime.Object, error)) (cache.ListerWatcher, error) {
	gv := gvr.GroupVersion()
	cfg := c.configs[gv]
	if cfg == nil {
		return nil, fmt.Errorf("herald's client does not speak %s", gv)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf
	cfg.NegotiatedSerializer = decodingSerializer{NegotiatedSerializer: cfg.NegotiatedSerializer, kind: kind, decode: decode}
	rc, err := rest.RESTClientForConfigAndClient(cfg, c.http)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", gvr, err)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts = InPages(opts)
			return rc.Get().Resource(gvr.Resource).VersionedParams(&opts, parameters).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return rc.Get().Resource(gvr.Resource).VersionedParams(&opts, parameters).Watch(ctx)
		},
	}, nil
}

// decodingSerializer is a client's serializers with the protobuf one's
// decoder replaced by a decodingDecoder.
type decodingSerializer struct {
	runtime.NegotiatedSerializer
	kind   string
	decode func([]byte) (runtime.Object, error)
}

func (s decodingSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := slices.Clone(s.NegotiatedSerializer.SupportedMediaTypes())
	for i, info := range infos {
		if info.MediaType == runtime.ContentTypeProtobuf {
			infos[i].Serializer = decodingDecoder{Serializer: info.Serializer, kind: s.kind, decode: s.decode}
			if info.StreamSerializer != nil {
				stream := *info.StreamSerializer // shared with every client: not changed in place
				stream.Serializer = watchEventDecoder{Serializer: stream.Serializer}
				infos[i].StreamSerializer = &stream
			}
		}
	}
	return infos
}

// watchEventDecoder reads the frames of a protobuf watch, each a
// metav1.WatchEvent: its type (1) and its object (2), a RawExtension
// whose raw (1) is the object's own envelope. The object is not copied:
// client-go's decoder copies it out of the frame into a new slice for
// every event (a pod's 5–10 KB, the largest allocation per event under
// churn, issue #34), to decode it at once and drop it. Here the event's
// raw is the frame's memory, which the stream reuses for the next frame:
// client-go's watch decoder decodes the object before it reads another
// frame, and decode keeps nothing of raw (ListerWatcherDecoding).
type watchEventDecoder struct {
	runtime.Serializer
}

var watchEventKind = metav1.SchemeGroupVersion.WithKind("WatchEvent")

func (d watchEventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	event, ok := into.(*metav1.WatchEvent)
	if !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
	*event = metav1.WatchEvent{}
	err := eachField(data, func(num protowire.Number, val []byte) error {
		switch num {
		case 1:
			event.Type = eventType(val)
		case 2:
			return eachField(val, func(num protowire.Number, val []byte) error {
				if num == 1 {
					event.Object.Raw = val[:len(val):len(val)] // an append cannot write into the frame
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("decoding a watch event: %w", err)
	}
	gvk := watchEventKind
	return event, &gvk, nil
}

// eventType is a watch event's type, without an allocation for the
// types there are.
func eventType(b []byte) string {
	switch string(b) {
	case string(watch.Added):
		return string(watch.Added)
	case string(watch.Modified):
		return string(watch.Modified)
	case string(watch.Deleted):
		return string(watch.Deleted)
	case string(watch.Bookmark):
		return string(watch.Bookmark)
	case string(watch.Error):
		return string(watch.Error)
	}
	return string(b) // client-go's decoder refuses it
}

// protobufPrefix starts every protobuf-encoded object the API server
// sends; the envelope (a runtime.Unknown) follows.
var protobufPrefix = []byte("k8s\x00")

// decodingDecoder decodes objects of kind, and lists of them, with
// decode; anything else with the scheme's serializer.
type decodingDecoder struct {
	runtime.Serializer
	kind   string
	decode func([]byte) (runtime.Object, error)
}

func (d decodingDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into == nil && bytes.HasPrefix(data, protobufPrefix) {
		apiVersion, kind, raw, err := envelope(data[len(protobufPrefix):])
		if err != nil {
			return nil, nil, err
		}
		gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
		switch kind {
		case d.kind:
			obj, err := d.decode(raw)
			return obj, &gvk, err
		case d.kind + "List":
			list, err := d.decodeList(raw)
			return list, &gvk, err
		}
	}
	return d.Serializer.Decode(data, defaults, into)
}

// envelope reads a runtime.Unknown: the TypeMeta (1) and the object's
// own encoding (2). The encoding is not copied.
func envelope(b []byte) (apiVersion, kind string, raw []byte, err error) {
	err = eachField(b, func(num protowire.Number, val []byte) error {
		switch num {
		case 1:
			return eachField(val, func(num protowire.Number, val []byte) error {
				switch num {
				case 1:
					apiVersion = string(val)
				case 2:
					kind = string(val)
				}
				return nil
			})
		case 2:
			raw = val
		}
		return nil
	})
	if err != nil {
		return "", "", nil, fmt.Errorf("decoding a protobuf envelope: %w", err)
	}
	return apiVersion, kind, raw, nil
}

// decodeList decodes a list of kind: its ListMeta (1) and items (2).
func (d decodingDecoder) decodeList(b []byte) (*List, error) {
	list := &List{}
	err := eachField(b, func(num protowire.Number, val []byte) error {
		switch num {
		case 1:
			return list.ListMeta.Unmarshal(val)
		case 2:
			obj, err := d.decode(val)
			if err != nil {
				return err
			}
			list.Items = append(list.Items, obj)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decoding a list of %s: %w", d.kind, err)
	}
	return list, nil
}

// eachField calls fn with the number and payload of every
// length-delimited field of message b, and skips the others.
func eachField(b []byte, fn func(num protowire.Number, val []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		val, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, val); err != nil {
			return err
		}
	}
	return nil
}
