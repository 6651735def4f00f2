package rules

import (
	"regexp"
	"strings"
)

// What a waiting container's message says, read for people. The kubelet
// wraps the registry's or the API server's answer in its own words
// ("Back-off pulling image \"x\": ErrImagePull: rpc error: code =
// NotFound desc = …"); an alert that repeats the wrapping, or only the
// reason, makes its reader open a terminal to learn which image or which
// Secret. These read the answer out, and fall back to the message as it
// is when it has another shape.

// pullPrefixes are the kubelet's and the runtime's wrappings of a
// registry's answer, outermost first.
var pullPrefixes = []*regexp.Regexp{
	regexp.MustCompile(`^Back-off pulling image "[^"]*":?\s*`),
	regexp.MustCompile(`^(ErrImagePull|ImagePullBackOff|InvalidImageName|ErrImageNeverPull):\s*`),
	regexp.MustCompile(`^rpc error: code = \w+ desc = `),
	regexp.MustCompile(`^failed to pull and unpack image "[^"]*":\s*`),
	regexp.MustCompile(`^failed to pull image "[^"]*":\s*`),
}

// pullAnswer is the registry's answer in a waiting message about an
// image pull ("" when the message only says the kubelet backs off).
func pullAnswer(message string) string {
	s := strings.TrimSpace(message)
	for _, re := range pullPrefixes {
		s = re.ReplaceAllString(s, "")
	}
	return strings.TrimSpace(s)
}

// pullDetail is the one sentence of an image-pull finding: the image and
// the registry's answer.
func pullDetail(reason, image, message string) (detail string, facts map[string]string) {
	facts = map[string]string{}
	answer := pullAnswer(message)
	if answer != "" {
		facts["pullError"] = answer
	}
	what := "cannot pull the image"
	switch reason {
	case "InvalidImageName":
		what = "invalid image name"
	case "ErrImageNeverPull":
		what = "image not present and imagePullPolicy is Never"
	}
	if image != "" {
		what += " " + strQuote(image)
	}
	if answer != "" {
		return what + ": " + answer, facts
	}
	return what + " (" + reason + ")", facts
}

var (
	missingObject = regexp.MustCompile(`^(secret|configmap) "([^"]+)" not found$`)
	missingKey    = regexp.MustCompile(`^couldn't find key (\S+) in (Secret|ConfigMap) (\S+)$`)
)

// configDetail reads which Secret or ConfigMap (and key) a container's
// configuration names and cannot find, from a CreateContainerConfigError
// message: `secret "db" not found`, `couldn't find key password in
// Secret shop/db`.
func configDetail(namespace, message string) (detail string, facts map[string]string) {
	m := strings.TrimSpace(message)
	if g := missingObject.FindStringSubmatch(m); g != nil {
		kind := map[string]string{"secret": "Secret", "configmap": "ConfigMap"}[g[1]]
		return kind + " " + namespace + "/" + g[2] + " not found", map[string]string{"missingKind": kind, "missingName": g[2]}
	}
	if g := missingKey.FindStringSubmatch(m); g != nil {
		name := g[3]
		if _, after, ok := strings.Cut(name, "/"); ok {
			name = after
		}
		return "key " + g[1] + " not found in " + g[2] + " " + g[3], map[string]string{"missingKind": g[2], "missingName": name, "missingKey": g[1]}
	}
	return "", nil
}

// strQuote quotes s with double quotes (no Go escaping: an image
// reference has no character that needs it, and a hostile one is escaped
// by each sink).
func strQuote(s string) string { return `"` + s + `"` }
