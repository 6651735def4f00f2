package testenv

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// Pool hands out control planes to tests one at a time and takes each
// back when its test ends, emptied of what the test made, for the next:
// starting one costs ~4 CPU-seconds (mostly the API server's), and a
// package of end-to-end tests starts dozens.
//
// A control plane is handed out again only if it is as it started: every
// object made since is deleted (finalizers removed, namespaces finalized:
// no controller-manager runs to do it), and if an object that was there
// at the start has changed (a test labelled the default namespace,
// edited a bootstrap role) or the API server or etcd was stopped, it is
// stopped instead (apiServerOwn lists what the API server changes on its
// own). Only control planes of the default Options are pooled.
type Pool struct {
	mu     sync.Mutex
	idle   []*pooled
	closed bool
}

// pooled is a control plane and the objects it had when it started.
type pooled struct {
	env      *Env
	baseline map[types.UID]string // uid -> resourceVersion
}

// Get returns a control plane for t, from the pool or newly started, and
// gives it back when t ends.
func (p *Pool) Get(t testing.TB) *Env {
	t.Helper()
	p.mu.Lock()
	var pe *pooled
	if n := len(p.idle); n > 0 {
		pe, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if pe == nil {
		env, err := Start(context.Background(), Options{Logf: t.Logf})
		if err != nil {
			t.Fatalf("starting the test control plane: %v", err)
		}
		pe = &pooled{env: env}
		if pe.baseline, err = snapshot(env); err != nil {
			env.Stop()
			t.Fatalf("listing the new control plane's objects: %v", err)
		}
	}
	t.Cleanup(func() { p.put(t, pe) })
	return pe.env
}

// put empties pe and keeps it, or stops it if it cannot be made as new.
func (p *Pool) put(t testing.TB, pe *pooled) {
	if err := reset(pe); err != nil {
		t.Logf("testenv: control plane not reused: %v", err)
		pe.env.Stop()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		pe.env.Stop()
		return
	}
	p.idle = append(p.idle, pe)
}

// Close stops the idle control planes; those still in use stop when
// their tests give them back.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, pe := range idle {
		pe.env.Stop()
	}
}

// apiServerOwn are the objects the API server makes and changes on its
// own, early or late: those of its own namespaces (which no test uses),
// the kubernetes Service's endpoints, priority and fairness, APIServices.
// A reset leaves them alone.
func apiServerOwn(o object) bool {
	switch o.namespace {
	case "kube-system", "kube-public", "kube-node-lease":
		return true
	}
	switch o.gvr.Resource {
	case "endpoints", "endpointslices":
		return o.namespace == "default" && strings.HasPrefix(o.name, "kubernetes")
	case "flowschemas", "prioritylevelconfigurations", "apiservices":
		return true
	}
	return false
}

// object is one object of the control plane.
type object struct {
	gvr                  schema.GroupVersionResource
	namespace, name      string
	uid                  types.UID
	resourceVersion      string
	finalizers, deleting bool
}

// objects lists every object of every resource that can be listed and
// deleted (events included).
func objects(ctx context.Context, env *Env) ([]object, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	lists, err := disco.ServerPreferredResources()
	if err != nil {
		return nil, err
	}
	var all []object
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !has(r.Verbs, "list") || !has(r.Verbs, "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			items, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				continue // a resource of a custom resource definition being deleted
			}
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", gvr, err)
			}
			for _, it := range items.Items {
				all = append(all, object{gvr: gvr, namespace: it.GetNamespace(), name: it.GetName(), uid: it.GetUID(),
					resourceVersion: it.GetResourceVersion(), finalizers: len(it.GetFinalizers()) > 0,
					deleting: it.GetDeletionTimestamp() != nil})
			}
		}
	}
	return all, nil
}

func has(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}

func snapshot(env *Env) (map[types.UID]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := objects(ctx, env)
	if err != nil {
		return nil, err
	}
	baseline := make(map[types.UID]string, len(all))
	for _, o := range all {
		baseline[o.uid] = o.resourceVersion
	}
	return baseline, nil
}

// reset deletes what was made since pe started and waits until it is
// gone; it fails if the control plane was restarted or an object it
// started with has changed.
func reset(pe *pooled) error {
	if pe.env.restarted {
		return fmt.Errorf("its API server or etcd was stopped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dyn, err := dynamic.NewForConfig(pe.env.Config)
	if err != nil {
		return err
	}
	client, err := pe.env.Client()
	if err != nil {
		return err
	}
	zero := int64(0)
	background := metav1.DeletePropagationBackground
	for {
		all, err := objects(ctx, pe.env)
		if err != nil {
			return err
		}
		left := 0
		for _, o := range all {
			if apiServerOwn(o) {
				continue
			}
			if rv, ok := pe.baseline[o.uid]; ok {
				if rv != o.resourceVersion {
					return fmt.Errorf("%s %s/%s changed", o.gvr.Resource, o.namespace, o.name)
				}
				continue
			}
			left++
			res := dyn.Resource(o.gvr).Namespace(o.namespace)
			// A custom resource definition's finalizer is the API
			// server's own: it deletes the resources' objects first.
			if o.finalizers && o.gvr.Resource != "customresourcedefinitions" {
				_, err := res.Patch(ctx, o.name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("removing the finalizers of %s %s/%s: %w", o.gvr.Resource, o.namespace, o.name, err)
				}
			}
			if o.gvr.Resource == "namespaces" && o.deleting {
				// The namespace controller's work: once empty, finalize.
				ns, err := client.CoreV1().Namespaces().Get(ctx, o.name, metav1.GetOptions{})
				if err == nil {
					ns.Spec.Finalizers = nil
					_, err = client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
				}
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					return fmt.Errorf("finalizing namespace %s: %w", o.name, err)
				}
				continue
			}
			if o.deleting {
				continue
			}
			err := res.Delete(ctx, o.name, metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &background})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("deleting %s %s/%s: %w", o.gvr.Resource, o.namespace, o.name, err)
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d objects made by the test still there after 30 s", left)
		case <-time.After(50 * time.Millisecond): // then list again
		}
	}
}
