package redact

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
)

// vendorFormat is one vendor's token format: a token that names its
// issuer by its shape (a documented prefix, a length, a charset), found
// with no key name beside it. The formats are the vendors' published
// ones, as secret scanners list them (docs/rules.md names each).
type vendorFormat struct {
	name string
	// literals: one of them, in this case, is in every such token (its
	// prefix): a text without any is not scanned for the format. anyCase:
	// in any case (the literals are then lower-case).
	literals []string
	anyCase  bool
	find     func(t *text, out []span) []span
}

// format: a token every match of expr is, said to be a label. A leading
// \b is checked by hand (the byte before a match is not a word byte):
// left in the pattern, it keeps the regexp engine from skipping ahead to
// the literal prefix, and a pod's long log tail would cost a pass of the
// engine per format.
func format(name, label, expr string, literals ...string) vendorFormat {
	expr, atWord := strings.CutPrefix(expr, `\b`)
	re, label := regexp.MustCompile(expr), "<redacted "+label+">"
	return vendorFormat{name: name, literals: literals, find: func(t *text, out []span) []span {
		for _, m := range re.FindAllStringIndex(t.s, -1) {
			if atWord && m[0] > 0 && isWordByte(t.s[m[0]-1]) {
				continue
			}
			out = append(out, span{m[0], m[1], label})
		}
		return out
	}}
}

// inner: a secret that is group 1 of expr's matches (the rest is its
// marker: a URL's host and path, a JSON key), unless keep says that it
// is harmless.
func inner(name, expr string, keep func(string) bool, literals ...string) vendorFormat {
	return vendorFormat{name: name, literals: literals, find: group(regexp.MustCompile(expr), Redacted, keep)}
}

// alone: a token every match of expr is, when the bytes either side of it
// are not of class (it stands alone), redacted whole.
func alone(name, expr string, class func(byte) bool, literals ...string) vendorFormat {
	re := regexp.MustCompile(expr)
	return vendorFormat{name: name, literals: literals, find: func(t *text, out []span) []span {
		for _, m := range re.FindAllStringIndex(t.s, -1) {
			if m[0] > 0 && class(t.s[m[0]-1]) || m[1] < len(t.s) && class(t.s[m[1]]) {
				continue
			}
			out = append(out, span{m[0], m[1], Redacted})
		}
		return out
	}}
}

// vendorFormats lists the formats in the order docs/rules.md does.
// Patterns start with a literal where the format has one, so that the
// regexp engine skips to it.
func vendorFormats() []vendorFormat {
	return []vendorFormat{
		format("github", "GitHub token", `\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`, "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
		// Routable tokens end in "." and a 9-character part.
		format("gitlab", "GitLab token", `\bgl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|agent|oas|ffct)-[A-Za-z0-9_\-]{20,}(?:\.[0-9a-z]{9}\b)?`, "glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "glcbt-", "glimt-", "glagent-", "gloas-", "glffct-"),
		format("gitlab-runner", "GitLab runner token", `\bGR1348941[A-Za-z0-9_\-]{20,}`, "GR1348941"),
		format("slack", "Slack token", `\b(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})`, "xox", "xapp-"),
		inner("slack-webhook", `hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_\-]{10,})`, nil, "hooks.slack.com/"),
		inner("teams-webhook", `(?:\.webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook)/([A-Za-z0-9@/_\-]{20,})`, nil, ".webhook.office.com/", "outlook.office.com/webhook/", "outlook.office365.com/webhook/"),
		format("stripe", "Stripe key", `\b(?:[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{20,})`, "sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
		format("google", "Google key", `\b(?:AIza[A-Za-z0-9_\-]{35}|ya29\.[A-Za-z0-9_\-]{20,})`, "AIza", "ya29."),
		format("aws-key-id", "AWS key id", `\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b`, "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"),
		format("alibaba", "Alibaba key id", `\bLTAI[A-Za-z0-9]{20}\b`, "LTAI"),
		// A client secret's fourth character is a digit and "Q~" follows.
		alone("azure-ad", `[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}`, func(c byte) bool { return isWordByte(c) || c == '~' || c == '.' || c == '-' }, "Q~"),
		format("npm", "npm token", `\bnpm_[A-Za-z0-9]{36,}`, "npm_"),
		format("pypi", "PyPI token", `\bpypi-AgE[A-Za-z0-9_\-]{50,}`, "pypi-AgE"),
		format("rubygems", "RubyGems key", `\brubygems_[a-f0-9]{48}\b`, "rubygems_"),
		format("openai-anthropic", "API key", `\bsk-(?:proj-|svcacct-|admin-|ant-[a-z0-9]+-)?[A-Za-z0-9_\-]{32,}`, "sk-"),
		format("perplexity", "Perplexity key", `\bpplx-[A-Za-z0-9]{48}\b`, "pplx-"),
		format("vault", "Vault token", `\bhv[sbr]\.[A-Za-z0-9_\-]{20,}`, "hvs.", "hvb.", "hvr."),
		format("sendgrid", "SendGrid key", `\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}`, "SG."),
		format("brevo", "Brevo key", `\bxkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}\b`, "xkeysib-"),
		format("twilio", "Twilio key", `\bSK[0-9a-fA-F]{32}\b`, "SK"),
		format("docker", "Docker token", `\bdckr_pat_[A-Za-z0-9_\-]{20,}`, "dckr_pat_"),
		format("digitalocean", "DigitalOcean token", `\bdo[opr]_v1_[a-f0-9]{64}`, "_v1_"),
		format("huggingface", "Hugging Face token", `\b(?:hf_|api_org_)[A-Za-z0-9]{34,40}\b`, "hf_", "api_org_"),
		format("openshift", "OpenShift token", `\bsha256~[A-Za-z0-9_\-]{43}`, "sha256~"),
		format("shopify", "Shopify token", `\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`, "shpat_", "shpca_", "shppa_", "shpss_"),
		format("atlassian", "Atlassian token", `\bATATT3[A-Za-z0-9_\-=]{180,}`, "ATATT3"),
		format("databricks", "Databricks token", `\bdapi[a-f0-9]{32}(?:-[0-9])?\b`, "dapi"),
		format("doppler", "Doppler token", `\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}\b`, "dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
		format("postman", "Postman key", `\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}\b`, "PMAK-"),
		format("grafana", "Grafana token", `\b(?:glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b)`, "glc_", "glsa_"),
		format("heroku", "Heroku key", `\bHRKU-AA[A-Za-z0-9_\-]{58}`, "HRKU-"),
		format("linear", "Linear key", `\blin_api_[A-Za-z0-9]{40}\b`, "lin_api_"),
		format("sentry", "Sentry token", `\b(?:sntryu_[a-f0-9]{64}\b|sntrys_eyJ[A-Za-z0-9+/=_\-]{40,})`, "sntryu_", "sntrys_"),
		format("square", "Square token", `\b(?:EAAA|sq0atp-|sq0csp-)[A-Za-z0-9_\-]{22,60}`, "EAAA", "sq0atp-", "sq0csp-"),
		format("planetscale", "PlanetScale token", `\bpscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.\-]{32,64}`, "pscale_"),
		format("pulumi", "Pulumi token", `\bpul-[a-f0-9]{40}\b`, "pul-"),
		format("dynatrace", "Dynatrace token", `\bdt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}\b`, "dt0c01."),
		format("flyio", "Fly.io token", `\b(?:fo1_[A-Za-z0-9_\-]{43}|fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3})`, "fo1_", "fm1a_", "fm1r_", "fm2_"),
		format("cloudflare-origin-ca", "Cloudflare key", `\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}\b`, "v1.0-"),
		format("1password", "1Password secret", `\b(?:ops_eyJ[A-Za-z0-9+/]{250,}={0,3}|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b)`, "ops_eyJ", "A3-"),
		format("age", "age key", `\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b`, "AGE-SECRET-KEY-1"),
		format("notion", "Notion token", `\bntn_[0-9]{11}[A-Za-z0-9]{35}\b`, "ntn_"),
		format("sourcegraph", "Sourcegraph token", `\bsgp_(?:(?:[a-f0-9]{16}|local)_)?[a-f0-9]{40}\b`, "sgp_"),
		format("terraform-cloud", "Terraform Cloud token", `\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}`, ".atlasv1."),
		format("harness", "Harness token", `\b(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}\b`, "pat.", "sat."),
		format("octopus", "Octopus Deploy key", `\bAPI-[A-Z0-9]{26}\b`, "API-"),
		format("prefect", "Prefect key", `\bpnu_[A-Za-z0-9]{36}\b`, "pnu_"),
		format("readme", "ReadMe key", `\brdme_[a-z0-9]{70}\b`, "rdme_"),
		format("shippo", "Shippo token", `\bshippo_(?:live|test)_[a-fA-F0-9]{40}\b`, "shippo_"),
		format("easypost", "EasyPost key", `\bEZ[AT]K[A-Za-z0-9]{54}\b`, "EZAK", "EZTK"),
		format("infracost", "Infracost key", `\bico-[A-Za-z0-9]{32}\b`, "ico-"),
		format("scalingo", "Scalingo token", `\btk-us-[A-Za-z0-9_\-]{48}\b`, "tk-us-"),
		// A container registry's config (~/.docker/config.json, a
		// dockerconfigjson Secret printed whole): "auth" holds
		// base64("user:password").
		inner("registry-auth", `\\?"auth\\?"\s*:\s*\\?"([A-Za-z0-9+/_\-]{6,}={0,2})`, notUserPassword, `"auth`),
		// A URL carried percent-encoded in another URL's query
		// (?redirect=https%3A%2F%2Fuser%3Apassword%40host): its password.
		encodedURL(),
		format("jwt", "JWT", `\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`, "eyJ"),
	}
}

// notUserPassword: an "auth" value that does not decode (in any of
// base64's forms) to user:password with a password is something else,
// left as it is.
func notUserPassword(v string) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			_, pw, ok := strings.Cut(string(b), ":")
			return !ok || pw == ""
		}
	}
	return true
}

// encodedURL: a URL with a password, percent-encoded (once or more) inside
// another URL's query (?next=https%3A%2F%2Fuser%3Apassword%40host): the
// password. A "/" ends the user-info (host%3A8443%2Fpath%40 is a port and
// a path), so an encoded "/" is not taken into the password.
func encodedURL() vendorFormat {
	const (
		pct    = `%(?:25)*`                               // "%", encoded any number of times
		esc    = pct + `(?:[013-9A-F][0-9A-F]|2[0-9A-E])` // an escape, but "/" (2F)
		plain  = `[A-Za-z0-9._~!$'()*+,;=\-]`             // what user-info holds unescaped
		scheme = pct + `3A` + pct + `2F` + pct + `2F`     // "://"
		user   = `(?:[A-Za-z0-9._~\-]|` + esc + `)*?`
		pw     = `((?:` + plain + `|` + esc + `)+?)`
	)
	f := inner("encoded-url", `(?i)`+scheme+user+pct+`3A`+pw+pct+`40`, nil, "%3a%2f%2f", "%253a%252f%252f")
	f.anyCase = true
	return f
}

// vendorRule runs the formats one of whose literals the text holds. Its
// triggers (which gate it, in any case) are the literals lower-cased; the
// literals gate each format in their own case, so that a pod named
// "api-7d9f" does not run the pattern of Octopus Deploy's "API-" keys.
func vendorRule(formats []vendorFormat) rule {
	var triggers []string
	for _, f := range formats {
		for _, l := range f.literals {
			if l := strings.ToLower(l); !slices.Contains(triggers, l) {
				triggers = append(triggers, l)
			}
		}
	}
	return rule{name: "vendor", triggers: triggers, find: func(t *text, out []span) []span {
		for i := range formats {
			f := &formats[i]
			if in := t.s; f.anyCase && containsAny(t.lower, f.literals) || !f.anyCase && containsAny(in, f.literals) {
				out = f.find(t, out)
			}
		}
		return out
	}}
}
