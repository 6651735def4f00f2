package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/testenv"
)

// TestSilenceCommand drives herald silence create, list and expire
// against the real API server: before the CRDs are installed, with only
// the Silence CRD (a chart upgraded without applying its new CRD), as an
// admin, as a user whose RBAC allows silences in one namespace only, and
// as one with no access at all; ClusterSilences with --all-namespaces.
func TestSilenceCommand(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	ctx := context.Background()
	admin, _ := env.Client()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := func(user string) string {
		path := dir + "/" + user + ".kubeconfig"
		cfg := env.Config
		if user != testenv.AdminUser {
			cfg = env.ConfigFor(user)
		}
		if err := testenv.WriteKubeconfigOf(path, cfg); err != nil {
			t.Fatal(err)
		}
		return path
	}
	adminKC, aliceKC, bobKC := kubeconfig(testenv.AdminUser), kubeconfig("alice"), kubeconfig("bob")
	herald := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runMain(ctx, append([]string{"silence"}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	if code, _, errOut := herald("list", "--kubeconfig", adminKC); code != 1 || !strings.Contains(errOut, "silences.herald.io) is not installed") {
		t.Fatalf("without the CRD: exit %d, %q; want 1 and how to install it", code, errOut)
	}
	if err := env.InstallCRDs(ctx, silenceCRDs); err != nil {
		t.Fatal(err)
	}
	// Only the Silence CRD (helm upgrade does not install new CRDs):
	// Silences are listed, ClusterSilences are said to be missing.
	if code, _, errOut := herald("list", "--kubeconfig", adminKC); code != 0 || !strings.Contains(errOut, "ClusterSilences not shown: the ClusterSilence resource (clustersilences.herald.io) is not installed") {
		t.Errorf("without the ClusterSilence CRD, list: exit %d, %q", code, errOut)
	}
	if code, _, errOut := herald("create", "--kubeconfig", adminKC, "-A", "--rule", "x", "--for", "1h", "--comment", "x"); code != 1 ||
		!strings.Contains(errOut, "kubectl apply -f charts/herald/crds/ (helm upgrade does not install a chart's new CRDs)") {
		t.Errorf("without the ClusterSilence CRD, create -A: exit %d, %q", code, errOut)
	}
	if err := env.InstallCRDs(ctx, clusterSilenceCRDs); err != nil {
		t.Fatal(err)
	}
	createNamespaces(t, admin, "shop", "other")
	// alice may edit silences in shop only (as the chart's aggregated
	// edit role would give her there); bob may do nothing.
	if _, err := admin.RbacV1().Roles("shop").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "silencer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"herald.io"}, Resources: []string{"silences"}, Verbs: []string{"get", "list", "create", "patch", "delete"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("shop").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "silencer"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, bad := range [][]string{
		{"create", "--kubeconfig", adminKC, "--namespace", "shop", "--workload", "api", "--for", "2h"},    // no comment
		{"create", "--kubeconfig", adminKC, "--namespace", "shop", "--comment", "x", "--for", "2h"},       // no matcher
		{"create", "--kubeconfig", adminKC, "--namespace", "shop", "--workload", "api", "--comment", "x"}, // no end
		{"create", "--kubeconfig", adminKC, "--namespace", "shop", "--workload", "api", "--comment", "x", "--until", "monday"},
		{"create", "--kubeconfig", adminKC, "--namespace", "shop", "--all-namespaces", "--workload", "api", "--comment", "x", "--for", "2h"},
		{"create", "--kubeconfig", adminKC, "--namespace", "herald", "--match-namespace", "batch-*", "--rule", "x", "--comment", "x", "--for", "2h"},
		{"expire", "--kubeconfig", adminKC, "--namespace", "shop", "-A", "x"},
		{"expire", "--kubeconfig", adminKC, "x"},
	} {
		if code, _, errOut := herald(bad...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, %q; want 2 and what is wrong", bad, code, errOut)
		}
	}

	// Everything missing is said at once.
	if code, _, errOut := herald("create", "--kubeconfig", adminKC, "--namespace", "shop", "--workload", "api"); code != 2 ||
		!strings.Contains(errOut, "missing --for or --until (every silence ends); --comment (why, for whoever sees the muted alerts)") {
		t.Errorf("no end, no comment: exit %d, %q; want 2 and both named", code, errOut)
	}
	// Without --namespace, the context's namespace, as kubectl does.
	shopKC := dir + "/shop.kubeconfig"
	kc, err := clientcmd.LoadFromFile(adminKC)
	if err != nil {
		t.Fatal(err)
	}
	kc.Contexts[kc.CurrentContext].Namespace = "other"
	if err := clientcmd.WriteToFile(*kc, shopKC); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := herald("create", "--kubeconfig", shopKC, "--workload", "batch", "--for", "1h", "--comment", "context's namespace")
	if code != 0 || !strings.Contains(out, "silence other/") || !strings.Contains(errOut, "namespace other (the namespace of context") {
		t.Errorf("create without --namespace: exit %d, %q %q; want a Silence in the context's namespace, other", code, out, errOut)
	}

	code, out, errOut = herald("create", "--kubeconfig", adminKC, "--namespace", "shop", "--workload", "api", "--for", "2h", "--comment", "deploying the fix")
	name := regexp.MustCompile(`silence shop/(silence-\S+) created`).FindStringSubmatch(out)
	if code != 0 || name == nil {
		t.Fatalf("create: exit %d, %q %q", code, out, errOut)
	}
	obj, err := dyn.Resource(silence.Resource).Namespace("shop").Get(ctx, name[1], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := silence.Parse(obj)
	if err != nil {
		t.Fatal(err)
	}
	if s.Matchers.Workload != "api" || s.Comment != "deploying the fix" || s.CreatedBy != testenv.AdminUser || s.EndsAt.Sub(s.StartsAt) != 2*time.Hour {
		t.Errorf("created %+v; want workload api, the comment, createdBy %s, 2h", s, testenv.AdminUser)
	}

	if code, _, errOut := herald("create", "--kubeconfig", aliceKC, "--namespace", "shop", "--name", "db-*", "--for", "30m", "--comment", "migrating"); code != 0 {
		t.Errorf("alice in shop: exit %d, %q", code, errOut)
	}
	if code, _, errOut := herald("create", "--kubeconfig", aliceKC, "--namespace", "other", "--name", "db-*", "--for", "30m", "--comment", "migrating"); code != 1 ||
		!strings.Contains(errOut, "you may not create silences in namespace other") {
		t.Errorf("alice in other: exit %d, %q; want 1 and that RBAC forbids it", code, errOut)
	}
	if code, _, errOut := herald("list", "--kubeconfig", bobKC); code != 1 || !strings.Contains(errOut, "you may not list silences in any namespace") {
		t.Errorf("bob lists: exit %d, %q; want 1 and that RBAC forbids it", code, errOut)
	}
	// Muting every namespace is a permission of its own.
	if code, _, errOut := herald("create", "--kubeconfig", aliceKC, "--all-namespaces", "--name", "db-*", "--for", "30m", "--comment", "migrating"); code != 1 ||
		!strings.Contains(errOut, "you may not create clustersilences") || !strings.Contains(errOut, "clustersilences-admin") {
		t.Errorf("alice creates a ClusterSilence: exit %d, %q; want 1 and that it is a permission of its own", code, errOut)
	}
	code, out, errOut = herald("create", "--kubeconfig", adminKC, "-A", "--match-namespace", "batch-*", "--rule", "job-failed", "--for", "1h", "--comment", "nightly ETL",
		"--starts", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	cluster := regexp.MustCompile(`clustersilence (silence-\S+) created`).FindStringSubmatch(out)
	if code != 0 || cluster == nil {
		t.Fatalf("create -A: exit %d, %q %q", code, out, errOut)
	}
	if obj, err := dyn.Resource(silence.ClusterResource).Get(ctx, cluster[1], metav1.GetOptions{}); err != nil || obj.GetNamespace() != "" {
		t.Errorf("the ClusterSilence: %v", err)
	} else if s, err := silence.Parse(obj); err != nil || !s.Cluster || s.Matchers.Namespace != "batch-*" || s.Matchers.Rule != "job-failed" {
		t.Errorf("created %+v (%v)", s, err)
	}

	code, out, errOut = herald("list", "--kubeconfig", aliceKC, "--namespace", "shop")
	if code != 0 || !regexp.MustCompile(name[1]+`\s+active\s+\S+\s+workload=api\s+0\s+`+testenv.AdminUser+`\s+deploying the fix`).MatchString(out) ||
		!regexp.MustCompile(`active\s+\S+\s+name=db-\*\s+0\s+alice\s+migrating`).MatchString(out) ||
		!strings.Contains(errOut, "ClusterSilences not shown: you may not list clustersilences") {
		t.Errorf("list: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, _ = herald("list", "--kubeconfig", adminKC, "-A")
	if code != 0 || !regexp.MustCompile(`\(cluster\)\s+`+cluster[1]+`\s+active\s+\S+\s+namespace=batch-\*\s+rule=job-failed\s+0\s+`+testenv.AdminUser+`\s+nightly ETL`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^shop\s+`+name[1]).MatchString(out) {
		t.Errorf("list -A: exit %d:\n%s", code, out)
	}
	if code, out, errOut := herald("expire", "--kubeconfig", adminKC, "--all-namespaces", cluster[1]); code != 0 || out != "clustersilence "+cluster[1]+" expired: what it muted and is still firing goes out now\n" {
		t.Errorf("expire -A: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := herald("expire", "--kubeconfig", adminKC, "-A", "no-such"); code != 1 || !strings.Contains(errOut, "no silence no-such among the ClusterSilences") {
		t.Errorf("expire -A an unknown silence: exit %d, %q", code, errOut)
	}

	if code, out, errOut := herald("expire", "--kubeconfig", adminKC, "--namespace", "shop", name[1]); code != 0 || !strings.Contains(out, "expired") {
		t.Fatalf("expire: exit %d, %q %q", code, out, errOut)
	}
	obj, _ = dyn.Resource(silence.Resource).Namespace("shop").Get(ctx, name[1], metav1.GetOptions{})
	ends, _, _ := unstructured.NestedString(obj.Object, "spec", "endsAt")
	if s, err := silence.Parse(obj); err != nil || s.State(time.Now().Add(time.Second)) != "expired" {
		t.Errorf("after expire: endsAt %s, state %s (%v)", ends, s.State(time.Now().Add(time.Second)), err)
	}
	if code, _, errOut := herald("expire", "--kubeconfig", adminKC, "--namespace", "shop", "no-such"); code != 1 || !strings.Contains(errOut, "no silence no-such in namespace shop") {
		t.Errorf("expire an unknown silence: exit %d, %q", code, errOut)
	}
}

// TestExpiryEnd: expiring a silence in the second it began ends it a
// second later (the Silence resource refuses endsAt == startsAt, and
// seconds are all RFC 3339 carries here); later, it ends now.
func TestExpiryEnd(t *testing.T) {
	beside(t)
	start := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	if got := expiryEnd(start, start); !got.Equal(start.Add(time.Second)) {
		t.Errorf("expired in its first second: ends %s, want %s", got, start.Add(time.Second))
	}
	if now := start.Add(5 * time.Minute); !expiryEnd(now, start).Equal(now) {
		t.Errorf("expired later: ends %s, want %s", expiryEnd(now, start), now)
	}
}
