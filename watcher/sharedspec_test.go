package watcher

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestReplicasShareTheirSpec: the replicas of a workload (the same
// containers, different nodes) hold one trimmed spec, each with its own
// node name, whether decoded from the wire or compacted from a decoded
// pod; a pod with another image holds another.
func TestReplicasShareTheirSpec(t *testing.T) {
	in := newInterner(1024)
	replica := func(name, node, image string) *corev1.Pod {
		pod := crashingPod(name)
		pod.Spec.NodeName = node
		pod.Spec.Containers[0].Image = image
		return pod
	}
	for _, how := range []string{"wire", "typed"} {
		t.Run(how, func(t *testing.T) {
			compact := func(pod *corev1.Pod) *CompactPod {
				raw, err := pod.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				var c *CompactPod
				if how == "wire" {
					c, err = decodeCompactPod(raw, in)
				} else {
					var decoded corev1.Pod
					if err = decoded.Unmarshal(raw); err == nil {
						c, err = compactPod(&decoded, in)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			a, b := compact(replica("shop-a", "node-1", "shop:1")), compact(replica("shop-b", "node-2", "shop:1"))
			other := compact(replica("shop-c", "node-1", "shop:2"))
			if a.spec != b.spec {
				t.Error("two replicas hold two copies of one spec")
			}
			if a.spec == other.spec {
				t.Error("a pod with another image holds the replicas' spec")
			}
			podA, podB, podC := expanded(t, a), expanded(t, b), expanded(t, other)
			if podA.Spec.NodeName != "node-1" || podB.Spec.NodeName != "node-2" || podC.Spec.NodeName != "node-1" {
				t.Errorf("node names %q %q %q, want node-1 node-2 node-1", podA.Spec.NodeName, podB.Spec.NodeName, podC.Spec.NodeName)
			}
			if podA.Spec.Containers[0].Image != "shop:1" || podC.Spec.Containers[0].Image != "shop:2" {
				t.Errorf("images %q and %q, want shop:1 and shop:2", podA.Spec.Containers[0].Image, podC.Spec.Containers[0].Image)
			}
		})
	}
}

// TestSharedSpecGoesWithItsLastPod: the interner's entry for a spec lives
// as long as some cached pod holds it, so specs that come and go (every
// rollout makes new ones) do not pile up.
func TestSharedSpecGoesWithItsLastPod(t *testing.T) {
	in := newInterner(1024)
	held := map[int]*CompactPod{}
	for i := range 100 {
		pod := crashingPod(fmt.Sprintf("shop-%d", i))
		pod.Spec.Containers[0].Image = fmt.Sprintf("shop:%d", i)
		c, err := compactPod(pod, in)
		if err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			held[i] = c
		}
	}
	specs := func() int {
		in.mu.Lock()
		defer in.mu.Unlock()
		return len(in.specs)
	}
	deadline := time.Now().Add(10 * time.Second)
	for specs() > len(held) && time.Now().Before(deadline) {
		runtime.GC() // cleanups run after a collection finds the spec unreachable
		runtime.Gosched()
	}
	if n := specs(); n != len(held) {
		t.Fatalf("%d specs kept for %d cached pods", n, len(held))
	}
	for i, c := range held {
		if p, err := c.Pod(); err != nil || p.Spec.Containers[0].Image != fmt.Sprintf("shop:%d", i) {
			t.Errorf("pod %d after the others went: %v, %v", i, p, err)
		}
	}
}

// TestReplicasDecodeTheirSpecOnce: while a decoded spec is in use, the
// other replicas of its workload are expanded from it rather than decode
// it again, each with its own node name; once nothing uses it, it is not
// kept.
func TestReplicasDecodeTheirSpecOnce(t *testing.T) {
	in := newInterner(1024)
	compact := func(name, node string) *CompactPod {
		pod := crashingPod(name)
		pod.Spec.NodeName = node
		c, err := compactPod(pod, in)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := compact("shop-a", "node-1"), compact("shop-b", "node-2")
	inUse, err := a.spec.decode()
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.spec.decode()
	if err != nil {
		t.Fatal(err)
	}
	if again != inUse {
		t.Error("a replica's spec was decoded again while the first decode was in use")
	}
	podA, podB := expanded(t, a), expanded(t, b)
	if podA.Spec.NodeName != "node-1" || podB.Spec.NodeName != "node-2" || inUse.NodeName != "" {
		t.Errorf("node names %q and %q (shared spec %q), want node-1, node-2 and none", podA.Spec.NodeName, podB.Spec.NodeName, inUse.NodeName)
	}
	if &podA.Spec.Containers[0] != &inUse.Containers[0] {
		t.Error("an expanded pod does not read the shared decode")
	}
	runtime.KeepAlive(inUse)
	inUse, again = nil, nil
	deadline := time.Now().Add(10 * time.Second)
	for a.spec.decodedHeld() && time.Now().Before(deadline) {
		runtime.GC()
		runtime.Gosched()
	}
	if a.spec.decodedHeld() {
		t.Error("the decoded spec is kept after nothing uses it")
	}
}

// decodedHeld says whether a decode of the spec is still in memory.
func (s *sharedSpec) decodedHeld() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decoded.Value() != nil
}

// expanded is the cached pod c decoded, as a worker reads it.
func expanded(t *testing.T, c *CompactPod) *corev1.Pod {
	t.Helper()
	pod, err := c.Pod()
	if err != nil {
		t.Fatal(err)
	}
	return pod
}
