// Package realnode holds herald's tests against a real node: a kubelet
// running real containers through containerd and runc, with the real
// scheduler and controller-manager (testenv.WithNode). Where the other
// tests write pod status by hand for exact control, these let the kubelet
// write it, with all its intermediate states, and check that herald sends
// the one alert an operator expects. The package has no code of its own.
//
// They need root and Debian's containerd, runc and
// containernetworking-plugins (make test installs them); see
// docs/testing.md.
package realnode
