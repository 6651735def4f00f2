package kube

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// watchFrame is one frame of a protobuf watch as the API server writes
// it: a WatchEvent carrying obj in its envelope, and the standard stream
// serializer client-go would have read it with.
func watchFrame(t testing.TB, typ watch.EventType, obj runtime.Object) ([]byte, runtime.Serializer) {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), protobufContentType)
	stream := info.StreamSerializer.Serializer
	var frame bytes.Buffer
	event := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: protobufOf(t, obj)}}
	if err := stream.Encode(event, &frame); err != nil {
		t.Fatal(err)
	}
	return frame.Bytes(), stream
}

// benchPod is a pod of about the size of a real one (6 KB), most of it
// the managed fields a server-side apply leaves.
func benchPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d4b9c-x2x9z", Namespace: "shop", ResourceVersion: "8812",
			Labels: map[string]string{"app": "web", "pod-template-hash": "7d4b9c"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{` + strings.Repeat(`"f:conditions":{},`, 300) + `}}`)}}}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "shop/web:1.4.2",
			Env: []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "REGION", Value: "eu-1"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 4,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}}}},
	}
}

// TestWatchEventDecoderReadsWhatClientGoReads: the same type and object
// as the standard decoder, the object left in the frame's memory.
func TestWatchEventDecoderReadsWhatClientGoReads(t *testing.T) {
	for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error, "SOMETHING"} {
		frame, standard := watchFrame(t, typ, benchPod())
		var want, got metav1.WatchEvent
		if _, _, err := standard.Decode(frame, nil, &want); err != nil {
			t.Fatal(err)
		}
		obj, _, err := watchEventDecoder{Serializer: standard}.Decode(frame, nil, &got)
		if err != nil || obj != &got {
			t.Fatalf("%s: decoded %T, %v; want the event passed in", typ, obj, err)
		}
		if got.Type != want.Type || !bytes.Equal(got.Object.Raw, want.Object.Raw) || len(got.Object.Raw) == 0 {
			t.Fatalf("%s: type %q and %d bytes of object, want %q and the standard decoder's %d", typ, got.Type, len(got.Object.Raw), want.Type, len(want.Object.Raw))
		}
		start, end := uintptr(unsafe.Pointer(&frame[0])), uintptr(unsafe.Pointer(&frame[len(frame)-1]))
		if p := uintptr(unsafe.Pointer(&got.Object.Raw[0])); p < start || p > end {
			t.Errorf("%s: the object was copied out of the frame", typ)
		}
	}
}

func TestWatchEventDecoderRefusesABrokenFrame(t *testing.T) {
	frame, standard := watchFrame(t, watch.Modified, benchPod())
	for n := 1; n < len(frame); n++ {
		var got metav1.WatchEvent
		_, _, err := watchEventDecoder{Serializer: standard}.Decode(frame[:n], nil, &got)
		var want metav1.WatchEvent
		_, _, werr := standard.Decode(frame[:n], nil, &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("cut at %d of %d bytes: herald's decoder says %v, the standard one %v", n, len(frame), err, werr)
		}
	}
}

// BenchmarkWatchEventDecode: a pod's watch event, read out of its frame
// by client-go's stream decoder and by herald's.
func BenchmarkWatchEventDecode(b *testing.B) {
	frame, standard := watchFrame(b, watch.Modified, benchPod())
	for name, d := range map[string]runtime.Decoder{"client-go": standard, "herald": watchEventDecoder{Serializer: standard}} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var ev metav1.WatchEvent
				if _, _, err := d.Decode(frame, nil, &ev); err != nil || len(ev.Object.Raw) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}
