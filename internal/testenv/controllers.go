package testenv

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// StartControllers runs kube-controller-manager against this control
// plane with only the named controllers (e.g. "clusterrole-aggregation",
// which folds ClusterRoles labelled aggregate-to-edit into the built-in
// edit role), for tests that need what those controllers do without a
// node. stop stops it (Stop does not); its log is Dir/<name>.log.
func (e *Env) StartControllers(controllers ...string) (stop func(), err error) {
	kubeconfig := filepath.Join(e.Dir, "controllers.kubeconfig")
	if err := writeKubeconfig(kubeconfig, e.Config.Host, e.Config.CAData, e.Config.BearerToken); err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	name := "kube-controller-manager-" + strings.Join(controllers, "-")
	p, err := startProcess(e.bins.KubeControllerManager, filepath.Join(e.Dir, name+".log"),
		"--kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[0]), "--leader-elect=false",
		"--controllers="+strings.Join(controllers, ","))
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, p.tail(30))
	}
	return p.stop, nil
}
