package main

import (
	"context"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/testenv"
)

// volumeScene shows a volume filling up on the real node: a database's
// claim, bound to a 64 MiB local volume, fills at 2 MiB a second. herald
// reads the kubelet's own measurements (its stats summary, through the
// API server's node proxy) and says when it will be full before it
// crosses 80 %, then that it is almost full; emptied, both resolve.
func volumeScene(ctx context.Context, client kubernetes.Interface, node, dir string, lines <-chan string, seen func([]string)) error {
	say("a volume filling up: the claim pgdata (64 MiB, a local volume on the node) fills at 2 MiB/s. herald reads the kubelet's measurements every 2 s. Expect one FIRING for VolumeFillingUp saying when it will be full, before it is 80%% full (the rule's window is 20 s: the forecast needs 10 s of samples), then one FIRING for VolumeAlmostFull (critical) at 90%%, then both RESOLVED once its files are deleted and the 30 s hold-down has passed")
	vol, err := testenv.NewLocalVolume(ctx, client, node, filepath.Join(dir, "pgdata"), ns, "pgdata", 64)
	if err != nil {
		return err
	}
	defer vol.Close()
	db := workload()
	db.VolumeMounts = []corev1.VolumeMount{{Name: "pgdata", MountPath: "/var/lib/postgresql"}}
	if err := createDeployment(ctx, client, "postgres", 1, db, []corev1.Volume{vol.Volume("pgdata")}); err != nil {
		return err
	}
	filled := make(chan error, 1)
	go func() { filled <- vol.Fill(ctx, 0, 60, 500*time.Millisecond) }() // 60 of 64 MiB
	if err := expect(lines, seen, 90*time.Second, "FIRING", "VolumeFillingUp", "demo/pgdata"); err != nil {
		return err
	}
	if err := expect(lines, seen, 60*time.Second, "FIRING", "VolumeAlmostFull", "demo/pgdata"); err != nil {
		return err
	}
	if err := <-filled; err != nil {
		return err
	}
	if err := vol.Empty(); err != nil {
		return err
	}
	if err := expect(lines, seen, 90*time.Second, "RESOLVED", "demo/pgdata"); err != nil {
		return err
	}
	return expect(lines, seen, 30*time.Second, "RESOLVED", "demo/pgdata")
}
