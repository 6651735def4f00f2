package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

// The cache notifier is a notifier built the way kubewatch is described:
// a client-go shared informer per watched kind caching whole objects,
// decoded as client-go decodes by default (JSON), an event handler that
// puts each update on a rate-limited work queue, and a worker that
// reads the object from the cache and POSTs one small JSON document. It
// judges, keeps and deduplicates nothing beyond that. kubewatch itself
// could not be run here (not served by the module proxy this machine
// reaches), so this stands in for it, written here from that description:
// its RSS after a churn is what herald's is read against, beside the
// floor notifier's CPU (docs/performance.md).

func runCacheNotifier(ctx context.Context, kubeconfig, url string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(Namespace))
	pods := factory.Core().V1().Pods().Informer()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer queue.ShutDown()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// One queue entry per update (the pod's key would let the work
		// queue fold two updates of a pod into one POST).
		UpdateFunc: func(_, obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				queue.Add(pod.Namespace + "/" + pod.Name + "@" + pod.ResourceVersion)
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		return ctx.Err()
	}
	fmt.Println(floorReady)
	hc := &http.Client{Timeout: 10 * time.Second}
	go func() { <-ctx.Done(); queue.ShutDown() }()
	for {
		key, shutdown := queue.Get()
		if shutdown {
			return ctx.Err()
		}
		name, _, _ := strings.Cut(key, "@")
		post(hc, url, pods.GetIndexer(), name)
		queue.Done(key)
		queue.Forget(key)
	}
}

// post sends the pod key names as the cache holds it now.
func post(hc *http.Client, url string, store cache.Indexer, key string) {
	if obj, ok, err := store.GetByKey(key); err == nil && ok {
		postPod(hc, url, obj.(*corev1.Pod), "cache notifier")
	}
}
