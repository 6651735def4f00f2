package main

import "fmt"

// maxKubeLogVerbosity is the highest --kube-log-verbosity herald takes
// without --force-kube-log-verbosity. client-go logs the URL of every
// request from 6, request headers (the bearer token masked, but not other
// credentials) from 7, and the bodies of requests and answers from 8:
// every Secret, token and object herald reads would land in its log, which
// is read by whoever reads logs, not only by who can read Secrets.
const maxKubeLogVerbosity = 5

// checkKubeLogVerbosity refuses a verbosity below 0, or above
// maxKubeLogVerbosity unless forced; forced, it returns the warning to
// log.
func checkKubeLogVerbosity(v int, force bool) (warning string, err error) {
	switch {
	case v < 0:
		return "", fmt.Errorf("--kube-log-verbosity %d: want 0 or more", v)
	case v > maxKubeLogVerbosity && !force:
		return "", fmt.Errorf("--kube-log-verbosity %d: above %d the Kubernetes client logs request URLs, headers and, from 8, the bodies of requests and answers (Secrets, tokens, every object herald reads); add --force-kube-log-verbosity for a debugging session", v, maxKubeLogVerbosity)
	case v > maxKubeLogVerbosity:
		return fmt.Sprintf("--kube-log-verbosity %d is forced: the Kubernetes client logs request URLs, headers and, from 8, request and answer bodies, Secrets included; lower it when done", v), nil
	}
	return "", nil
}
