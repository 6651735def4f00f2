package testenv

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Permissions are what a test's ServiceAccount may do: Cluster rules
// through a ClusterRole, Namespace rules through a Role in its namespace.
type Permissions struct {
	Cluster, Namespace []rbacv1.PolicyRule
}

// ServiceAccountConfig creates the ServiceAccount namespace/name with
// perms (a ClusterRole, a Role and their bindings, all named name) and
// returns a client configuration that authenticates as it, with a real
// token: for tests of what a least-privileged herald can and cannot do.
func (e *Env) ServiceAccountConfig(ctx context.Context, namespace, name string, perms Permissions) (*rest.Config, error) {
	admin, err := e.Client()
	if err != nil {
		return nil, err
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: namespace}}
	if _, err := admin.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("service account %s/%s: %w", namespace, name, err)
	}
	if len(perms.Cluster) > 0 {
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: perms.Cluster}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}, Subjects: subject}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	if len(perms.Namespace) > 0 {
		if _, err := admin.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: perms.Namespace}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if _, err := admin.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}, Subjects: subject}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	return e.TokenConfig(ctx, admin, namespace, name)
}

// TokenConfig returns a client configuration that authenticates as the
// existing ServiceAccount namespace/name (a TokenRequest, valid 1 h).
func (e *Env) TokenConfig(ctx context.Context, admin kubernetes.Interface, namespace, name string) (*rest.Config, error) {
	tok, err := admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/%s: %w", namespace, name, err)
	}
	return &rest.Config{Host: e.Config.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: e.Config.CAData}}, nil
}
