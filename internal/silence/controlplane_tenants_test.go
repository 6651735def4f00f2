package silence

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/testenv"
)

// chartSilenceRoles renders the chart's silence roles (helm template):
// the ClusterRoles aggregated into view/edit/admin and the
// clustersilences admin role.
func chartSilenceRoles(t *testing.T) []rbacv1.ClusterRole {
	t.Helper()
	helm, err := testenv.EnsureHelm(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helm, "template", "herald", "../../charts/herald", "-n", "herald", "--kube-version", "1.36.0",
		"--show-only", "templates/silence-roles.yaml")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var roles []rbacv1.ClusterRole
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var role rbacv1.ClusterRole
		if err := dec.Decode(&role); errors.Is(err, io.EOF) {
			return roles
		} else if err != nil {
			t.Fatal(err)
		}
		if role.Name != "" {
			roles = append(roles, role)
		}
	}
}

// grants says whether rules allow verb on resource in herald.io.
func grants(rules []rbacv1.PolicyRule, verb, resource string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, "herald.io") && slices.Contains(r.Resources, resource) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*"))
	})
}

// noTenantMutesAnother: with the chart's roles folded into the built-in
// ones by kube-controller-manager's own aggregation controller, a user
// with edit in namespace tenant-a may silence tenant-a, not tenant-b,
// and may not create a ClusterSilence; one with edit in herald's own
// namespace is no different. Their Silences mute nothing in tenant-b,
// whatever their matchers say; a ClusterSilence, made by someone bound
// to the chart's clustersilences admin role, does.
func noTenantMutesAnother(t *testing.T, env *testenv.Env, dyn dynamic.Interface, client kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, role := range chartSilenceRoles(t) {
		if _, err := client.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stop, err := env.StartControllers("clusterrole-aggregation")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		edit, err := client.RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
		return err == nil && grants(edit.Rules, "create", "silences"), nil
	})
	if err != nil {
		t.Fatal("the aggregation controller never folded the chart's silence roles into edit")
	}
	for _, name := range []string{"view", "edit", "admin"} {
		role, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"get", "create"} {
			if grants(role.Rules, verb, "clustersilences") {
				t.Errorf("the built-in %s role grants %s on clustersilences", name, verb)
			}
		}
	}

	bind := func(user, ns, clusterRole string) {
		t.Helper()
		ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterRole}
		subjects := []rbacv1.Subject{{Kind: "User", Name: user}}
		if ns == "" {
			_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		} else {
			_, err = client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	bind("alice", "tenant-a", "edit")
	bind("carol", "herald", "edit") // edit in herald's own namespace
	bind("dave", "", "herald-clustersilences-admin")
	as := func(user string) dynamic.Interface {
		d, err := dynamic.NewForConfig(env.ConfigFor(user))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	alice, carol, dave := as("alice"), as("carol"), as("dave")
	ends := time.Now().Add(time.Hour)
	spec := func(matchers map[string]any) map[string]any {
		return map[string]any{"matchers": matchers, "endsAt": ends.UTC().Format(time.RFC3339)}
	}
	create := func(who string, d dynamic.Interface, ns, name string, matchers map[string]any) error {
		obj := silenceObject(ns, name, spec(matchers))
		res := d.Resource(Resource).Namespace(ns)
		if ns == "" {
			obj, res = clusterSilenceObject(name, spec(matchers)), d.Resource(ClusterResource)
		}
		unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
		_, err := res.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Logf("%s creating %s %s: %v", who, obj.GetKind(), strings.TrimPrefix(ns+"/"+name, "/"), err)
		}
		return err
	}
	mustCreate := func(who string, d dynamic.Interface, ns, name string, matchers map[string]any) {
		t.Helper()
		if err := create(who, d, ns, name, matchers); err != nil {
			t.Fatalf("%s may not create a silence in %q: %v", who, ns, err)
		}
	}
	forbidden := func(who string, d dynamic.Interface, ns, name string) {
		t.Helper()
		if err := create(who, d, ns, name, map[string]any{"name": "db-*"}); !apierrors.IsForbidden(err) {
			t.Errorf("%s creating a silence in %q: %v; want Forbidden", who, ns, err)
		}
	}

	mustCreate("alice", alice, "tenant-a", "db", map[string]any{"name": "db-*"})
	mustCreate("alice", alice, "tenant-a", "aims-at-b", map[string]any{"namespace": "tenant-b", "name": "db-*"})
	forbidden("alice", alice, "tenant-b", "db")
	forbidden("alice", alice, "herald", "db")
	forbidden("alice", alice, "", "alice-everywhere") // a ClusterSilence
	mustCreate("carol", carol, "herald", "db-everywhere", map[string]any{"name": "db-*"})
	mustCreate("carol", carol, "herald", "db-in-b", map[string]any{"namespace": "tenant-b", "name": "db-*"})
	forbidden("carol", carol, "", "carol-everywhere")
	forbidden("carol", carol, "tenant-b", "db")

	m := startMuter(t, ctx, env, dyn)
	knows(t, m, "silence tenant-a/db", "silence tenant-a/aims-at-b", "silence herald/db-everywhere", "silence herald/db-in-b")
	in := func(ns string) *incident.Incident {
		return &incident.Incident{Rule: "pod-crashloop", Reason: "CrashLoopBackOff", Severity: "critical",
			Object: rules.ObjectRef{Kind: "Pod", Namespace: ns, Name: "db-0"}, Members: []string{"Pod/" + ns + "/db-0"}}
	}
	if mute, ok := m.Mute(in("tenant-a"), noIncidents, time.Now()); !ok || mute.By != "silence tenant-a/db" && mute.By != "silence tenant-a/aims-at-b" {
		t.Errorf("alice's own namespace: muted %v by %q; want by her silence", ok, mute.By)
	}
	if mute, ok := m.Mute(in("tenant-b"), noIncidents, time.Now()); ok {
		t.Fatalf("an incident in tenant-b is muted by %q: no Silence outside tenant-b may mute it", mute.By)
	}
	mustCreate("dave", dave, "", "db-in-b", map[string]any{"namespace": "tenant-b", "name": "db-*"})
	mutedBy(t, m, in("tenant-b"), noIncidents, "clustersilence db-in-b")
}
