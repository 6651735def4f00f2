package watcher

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// listBuiltin lists one Deployment and then watches nothing.
type listBuiltin struct{ list *appsv1.DeploymentList }

func (b listBuiltin) ListerWatcher(schema.GroupVersionResource, string) (cache.ListerWatcher, runtime.Object, error) {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return b.list.DeepCopy(), nil },
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil { // a streaming list: refuse, so that the reflector lists
				return nil, errors.New("no streaming lists here")
			}
			return watch.NewFake(), nil
		},
	}, &appsv1.Deployment{}, nil
}

func (listBuiltin) ListerWatcherDecoding(schema.GroupVersionResource, string, func([]byte) (runtime.Object, error)) (cache.ListerWatcher, error) {
	panic("not for Deployments")
}

// TestObserveBeforeStrip: an observer sees what the transform strips (the
// managed fields, the pod template), the cache still does not hold it, and
// an observer registered after the informer was made is refused.
func TestObserveBeforeStrip(t *testing.T) {
	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "7",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "argocd"}}}}
	d.Spec.Template.Spec.ServiceAccountName = "web"
	w := New(Clients{Builtin: listBuiltin{&appsv1.DeploymentList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []appsv1.Deployment{d}}}},
		0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := w.KeepWhen(func(string) Keep { return Keep{} }); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 1)
	if err := w.ObserveBeforeStrip("Deployment", func(obj any) {
		d := obj.(*appsv1.Deployment)
		seen <- d.ManagedFields[0].Manager + " " + d.Spec.Template.Spec.ServiceAccountName
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Informer("Deployment"); err != nil {
		t.Fatal(err)
	}
	if err := w.ObserveBeforeStrip("Deployment", func(any) {}); err == nil {
		t.Error("an observer registered after the informer was made was accepted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.Start(ctx)
	defer w.Shutdown()
	if err := w.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-seen:
		if got != "argocd web" {
			t.Errorf("the observer saw %q, want the managed fields and template", got)
		}
	case <-ctx.Done():
		t.Fatal("the observer never saw the listed Deployment")
	}
	obj, ok, err := w.Get(Key{Kind: "Deployment", Namespace: "shop", Name: "web"})
	if err != nil || !ok {
		t.Fatalf("Get: %v %v", ok, err)
	}
	if c := obj.(*appsv1.Deployment); c.ManagedFields != nil || c.Spec.Template.Spec.ServiceAccountName != "" {
		t.Errorf("the cache holds what the transform strips: %+v", c)
	}
}
