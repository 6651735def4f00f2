package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LocalVolume is a PersistentVolumeClaim bound to a local volume on the
// test node: a tmpfs of a fixed size mounted at Dir on the host (the
// node shares the host's mounts), so that its kubelet measures a
// filesystem of a known capacity, and the caller can fill it by writing
// into Dir as a pod's writes would land there.
type LocalVolume struct {
	Dir, Namespace, Claim, PV string
	client                    kubernetes.Interface
	closed                    sync.Once
}

// NewLocalVolume mounts a tmpfs of sizeMiB at dir (made if missing) and
// makes a PersistentVolume on node and a claim namespace/claim bound to
// it. Close deletes both and unmounts. It needs root, as the node does.
func NewLocalVolume(ctx context.Context, client kubernetes.Interface, node, dir, namespace, claim string, sizeMiB int) (*LocalVolume, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := syscall.Mount("herald-test-volume", dir, "tmpfs", 0, fmt.Sprintf("size=%dm,mode=0755", sizeMiB)); err != nil {
		return nil, fmt.Errorf("mounting a tmpfs for a local volume at %s: %w", dir, err)
	}
	v := &LocalVolume{Dir: dir, Namespace: namespace, Claim: claim, PV: "local-" + namespace + "-" + claim, client: client}
	size := resource.MustParse(fmt.Sprintf("%dMi", sizeMiB))
	noClass := ""
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: v.PV},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			// A local volume must say its node.
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		v.Close()
		return nil, err
	}
	// No StorageClass: the claim names its volume, and the controller
	// binds the two.
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &noClass, VolumeName: v.PV,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// Volume is the pod volume named name that mounts the claim.
func (v *LocalVolume) Volume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Claim}}}
}

// Close deletes the volume and unmounts the tmpfs (lazily: the kubelet
// may still hold its bind mount of a pod being deleted).
func (v *LocalVolume) Close() {
	v.closed.Do(func() { // a second Close must not detach another mount there
		ctx := context.Background()
		v.client.CoreV1().PersistentVolumeClaims(v.Namespace).Delete(ctx, v.Claim, metav1.DeleteOptions{})
		v.client.CoreV1().PersistentVolumes().Delete(ctx, v.PV, metav1.DeleteOptions{})
		syscall.Unmount(v.Dir, syscall.MNT_DETACH)
	})
}

// Fill writes files of 1 MiB named part-<from>..part-<to-1> into the
// volume, one every `every`: a volume filling at a known rate.
func (v *LocalVolume) Fill(ctx context.Context, from, to int, every time.Duration) error {
	chunk := make([]byte, 1<<20)
	t := time.NewTicker(every)
	defer t.Stop()
	for i := from; i < to; i++ {
		if err := os.WriteFile(filepath.Join(v.Dir, fmt.Sprintf("part-%03d", i)), chunk, 0o644); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Empty deletes every file of the volume.
func (v *LocalVolume) Empty() error {
	entries, err := os.ReadDir(v.Dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(v.Dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
