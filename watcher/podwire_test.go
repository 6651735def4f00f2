package watcher

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"
)

// randomPods fills pods with random values in every field, with the
// fields compaction looks at by name (the memory limit, the silence
// annotation) set often enough to matter.
func randomPods(seed int64, n int) []*corev1.Pod {
	f := randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
		},
		func(l *corev1.ResourceList, c randfill.Continue) {
			list := corev1.ResourceList{}
			for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU, "example.com/gpu"} {
				if c.Bool() {
					list[name] = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
				}
			}
			*l = list
		},
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			c.FillNoCustom(m)
			if c.Bool() {
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				m.Annotations[SilenceUntilAnnotation] = c.String(20)
			}
			if c.Bool() {
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				m.Annotations[TeamAnnotation] = strings.Repeat("t", c.Intn(2*maxTeam))
			}
		},
	)
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{}
		f.Fill(pods[i])
	}
	return pods
}

// TestDecodedAsCompacted: a pod decoded from protobuf straight into a
// CompactPod is the CompactPod made from the decoded corev1.Pod — the
// same metadata and, once expanded, the same spec and status — for
// random pods that set every field, the realistic one the benchmark
// creates, and a crash-looping one.
func TestDecodedAsCompacted(t *testing.T) {
	pods := append(randomPods(1, 2000), realisticPod(), crashingPod("shop-0"))
	for i, pod := range pods {
		want, got := bothDecodings(t, pod)
		if err := compactionDiff(got, want); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
	}
}

// bothDecodings compacts pod's protobuf encoding both ways: typed (what
// the informer decoded before: the whole pod, then compactPod) and
// straight from the wire (decodeCompactPod).
func bothDecodings(t *testing.T, pod *corev1.Pod) (typed, wire *CompactPod) {
	t.Helper()
	raw, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var decoded corev1.Pod
	if err := decoded.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	if typed, err = compactPod(&decoded, newInterner(1024)); err != nil {
		t.Fatal(err)
	}
	if wire, err = decodeCompactPod(raw, newInterner(1024)); err != nil {
		t.Fatalf("pod %s: %v", pod.Name, err)
	}
	return typed, wire
}

// compactionDiff says how got differs from want: in metadata, or in spec
// or status once expanded.
func compactionDiff(got, want *CompactPod) error {
	if !apiequality.Semantic.DeepEqual(got.ObjectMeta, want.ObjectMeta) {
		return fmt.Errorf("metadata\n got %#v\nwant %#v", got.ObjectMeta, want.ObjectMeta)
	}
	gotPod, err := got.Pod()
	if err != nil {
		return fmt.Errorf("expanding: %w", err)
	}
	wantPod, err := want.Pod()
	if err != nil {
		return fmt.Errorf("expanding what compactPod made: %w", err)
	}
	if !apiequality.Semantic.DeepEqual(gotPod.Spec, wantPod.Spec) {
		return fmt.Errorf("spec\n got %#v\nwant %#v", gotPod.Spec, wantPod.Spec)
	}
	if !apiequality.Semantic.DeepEqual(gotPod.Status, wantPod.Status) {
		return fmt.Errorf("status\n got %#v\nwant %#v", gotPod.Status, wantPod.Status)
	}
	return nil
}

// TestDecodedPodKeepsWhatDetectorsRead names the fields: a crash-looping
// pod's restart count, states, memory limit and labels survive; its
// environment, container IDs, other limits and annotations do not.
func TestDecodedPodKeepsWhatDetectorsRead(t *testing.T) {
	pod := crashingPod("shop-0")
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2")
	pod.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	pod.Spec.NodeName = "node-1"
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", Image: "shop:1", RestartCount: 7, ContainerID: "containerd://abc", ImageID: "sha256:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: "OOMKilled", ContainerID: "containerd://abc"}},
	}}}
	raw, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c, err := decodeCompactPod(raw, newInterner(16))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Pod()
	if err != nil {
		t.Fatal(err)
	}
	cs := got.Status.ContainerStatuses[0]
	if got.Name != "shop-0" || got.Labels["app"] != "shop" || got.OwnerReferences[0].Name != "shop-5d8f" ||
		got.Spec.NodeName != "node-1" || cs.RestartCount != 7 || cs.State.Waiting.Reason != "CrashLoopBackOff" ||
		cs.LastTerminationState.Terminated.ExitCode != 137 || *got.Spec.Containers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("decoded pod lacks what detectors read: %+v", got)
	}
	if want := (corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}); !apiequality.Semantic.DeepEqual(got.Spec.Containers[0].Resources.Limits, want) {
		t.Errorf("limits %v, want the memory limit only", got.Spec.Containers[0].Resources.Limits)
	}
	if got.Annotations != nil || got.Spec.Containers[0].Env != nil || cs.ContainerID != "" || cs.ImageID != "" ||
		cs.LastTerminationState.Terminated.ContainerID != "" {
		t.Errorf("decoded pod kept unread fields: %+v", got)
	}
}

// TestDecodingBadProtobufFails: a truncated or malformed encoding is an
// error naming what failed, never a panic or a half-decoded pod.
func TestDecodingBadProtobufFails(t *testing.T) {
	raw, err := crashingPod("shop-0").Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// Cut anywhere but between the pod's top-level fields, the
	// encoding is incomplete.
	boundary := map[int]bool{}
	for at, rest := 0, raw; len(rest) > 0; {
		f, r, err := nextField(rest)
		if err != nil {
			t.Fatal(err)
		}
		at += len(f.all)
		boundary[at], rest = true, r
	}
	for cut := 1; cut < len(raw); cut++ {
		if _, err := decodeCompactPod(raw[:cut], newInterner(16)); err == nil && !boundary[cut] {
			t.Fatalf("cut at %d of %d bytes decoded without error", cut, len(raw))
		}
	}
	// Metadata as a varint instead of a message.
	bad := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7)
	if _, err := decodeCompactPod(bad, newInterner(16)); err == nil {
		t.Error("metadata encoded as a varint decoded without error")
	}
	// The node name (read apart from the shared spec) as a varint: the
	// error names the pod and the field.
	nodeName := protowire.AppendVarint(protowire.AppendTag(nil, specNodeName, protowire.VarintType), 1)
	bad = append(slices.Clone(raw), protowire.AppendBytes(protowire.AppendTag(nil, podSpec, protowire.BytesType), nodeName)...)
	if _, err := decodeCompactPod(bad, newInterner(16)); err == nil || !strings.Contains(err.Error(), "default/shop-0") || !strings.Contains(err.Error(), "Spec.NodeName") {
		t.Errorf("a node name encoded as a varint: %v, want an error naming default/shop-0 and Spec.NodeName", err)
	}
}

// TestTrimmedLengthsWiden: an embedded message whose trimmed copy is 128
// bytes or longer gets a multi-byte length, and the copy decodes.
func TestTrimmedLengthsWiden(t *testing.T) {
	for _, n := range []int{0, 1, 120, 127, 128, 129, 16383, 16384, 70000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := corev1.PodStatus{Message: string(make([]byte, n)), PodIP: "dropped",
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ImageID: "dropped",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: string(make([]byte, n)), ContainerID: "dropped"}}}}}
			raw, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			out, err := appendTrimmed([]byte("prefix"), raw, keepStatus)
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.PodStatus
			if err := got.Unmarshal(out[len("prefix"):]); err != nil {
				t.Fatal(err)
			}
			want := corev1.PodStatus{Message: s.Message, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: s.Message}}}}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("trimmed status differs: %d message bytes, got %d / %d", n, len(got.Message), len(got.ContainerStatuses))
			}
		})
	}
}
