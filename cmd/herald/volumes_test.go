package main

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestReadyNodes: only nodes whose kubelet is Ready are read for volume
// stats: a NotReady one (or one whose kubelet never said) would hold one
// of the poller's places for its whole timeout, every round.
func TestReadyNodes(t *testing.T) {
	node := func(name string, ready corev1.ConditionStatus) runtime.Object {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if ready != "" {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: ready}}
		}
		return n
	}
	got := readyNodes([]runtime.Object{node("a", corev1.ConditionTrue), node("b", corev1.ConditionFalse), node("c", corev1.ConditionUnknown), node("d", ""), node("e", corev1.ConditionTrue)})
	if !slices.Equal(got, []string{"a", "e"}) {
		t.Errorf("read %v, want [a e]", got)
	}
}
