package testenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// TestAPIServerRestart: the API server comes back on the same address
// with the same data, and an informer started before the restart sees
// changes made after it.
func TestAPIServerRestart(t *testing.T) {
	env := New(t)
	pb := rest.CopyConfig(env.Config) // as herald's clients: protobuf
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(pb)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before", Namespace: "default"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 10)
	f := informers.NewSharedInformerFactory(client, 0)
	inf := f.Core().V1().ConfigMaps().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { seen <- obj.(*corev1.ConfigMap).Name }})
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	cache.WaitForCacheSync(stop, inf.HasSynced)

	env.StopAPIServer()
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	cm.Name = "after"
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case name := <-seen:
			if name == "after" {
				t.Logf("seen %s after it was created", time.Since(created))
				return
			}
		case <-timeout:
			t.Fatal("the informer did not see a change made after the API server restarted")
		}
	}
}
