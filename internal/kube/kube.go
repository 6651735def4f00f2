// Package kube is herald's narrow Kubernetes client: REST clients for only
// the API groups herald reads or writes, and a scheme holding only their
// types.
//
// Why not client-go's clientset: its typed clients, informer factory,
// discovery client and leader election all import the scheme of every API
// group Kubernetes has, and with them every group's types, clients,
// listers and apply configurations, about half of herald's binary and
// of the pages it maps (issue #17). herald needs a dozen kinds.
package kube

import (
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Scheme holds the types of the API groups herald uses, and nothing else.
var Scheme = runtime.NewScheme()

// Codecs decode and encode Scheme's types (protobuf, JSON, YAML).
var Codecs = serializer.NewCodecFactory(Scheme)

// parameters encodes list and log options as query parameters.
var parameters = runtime.NewParameterCodec(Scheme)

func init() {
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, eventsv1.AddToScheme,
		coordinationv1.AddToScheme, authnv1.AddToScheme, authzv1.AddToScheme,
		autoscalingv2.AddToScheme, discoveryv1.AddToScheme,
	} {
		utilruntime.Must(add(Scheme))
	}
	// Unversioned meta types (Status, ListOptions…) as the API server
	// sends them.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
}

// groups are the group versions Client speaks.
var groups = []schema.GroupVersion{
	corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion, batchv1.SchemeGroupVersion,
	eventsv1.SchemeGroupVersion, coordinationv1.SchemeGroupVersion,
	authnv1.SchemeGroupVersion, authzv1.SchemeGroupVersion,
	autoscalingv2.SchemeGroupVersion, discoveryv1.SchemeGroupVersion,
}

// Client reaches the API server for Scheme's groups over one HTTP client
// (one connection pool).
type Client struct {
	rest    map[schema.GroupVersion]*rest.RESTClient
	configs map[schema.GroupVersion]*rest.Config // each group's, for clients decoding differently
	http    *http.Client
	core    *rest.RESTClient
}

// New makes a Client. Objects travel as protobuf (smaller on the wire and
// cheaper to decode than JSON); nothing is requested until first use.
func New(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.NegotiatedSerializer = Codecs.WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	// As in client-go's clientset: a QPS set is one client-side rate
	// limit shared by every group; QPS 0 gives each group client-go's
	// default limit (5/s, burst 10); QPS < 0 turns it off.
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("kubernetes client: burst must be positive when QPS is (got %d)", cfg.Burst)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	c := &Client{rest: map[schema.GroupVersion]*rest.RESTClient{}, configs: map[schema.GroupVersion]*rest.Config{}, http: httpClient}
	for _, gv := range groups {
		gcfg := rest.CopyConfig(cfg)
		gcfg.GroupVersion = &gv
		gcfg.APIPath = "/apis"
		if gv.Group == "" {
			gcfg.APIPath = "/api"
		}
		rc, err := rest.RESTClientForConfigAndClient(gcfg, httpClient)
		if err != nil {
			return nil, fmt.Errorf("kubernetes client for %s: %w", gv, err)
		}
		c.rest[gv], c.configs[gv] = rc, gcfg
	}
	c.core = c.rest[corev1.SchemeGroupVersion]
	return c, nil
}
