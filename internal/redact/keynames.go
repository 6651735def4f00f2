package redact

import "strings"

// Which keys name a secret: decided by the key's parts (split at _ - .
// and camelCase), so a secret word counts wherever it stands
// (DB_PASSWORD_B64, clientSecret, ENCRYPTION_KEY), and a part after it
// that makes the key about a secret rather than the secret (secretName,
// token_ttl, password_file, max_tokens) counts too.

// secretWords name a secret wherever they stand in a key part
// ("dbpassword", "clientsecret").
var secretWords = []string{"password", "passwd", "passphrase", "secret", "token", "credential",
	"apikey", "privatekey", "accesskey", "signature", "sessionid", "sessid"}

// keyQualifiers make "key" a secret: api_key, ENCRYPTION_KEY, AccountKey.
var keyQualifiers = map[string]bool{
	"api": true, "access": true, "private": true, "secret": true, "encryption": true, "encrypt": true,
	"enc": true, "signing": true, "sign": true, "master": true, "client": true, "hmac": true,
	"aes": true, "license": true, "licence": true, "account": true, "app": true, "auth": true,
	"session": true, "shared": true, "storage": true, "service": true, "ssh": true, "jwt": true,
	"crypto": true, "cipher": true, "root": true, "admin": true, "deploy": true, "webhook": true,
	"consumer": true, "subscription": true, "decryption": true, "wrapping": true, "data": true,
}

// aboutSecret: a key part after the secret word that makes the key about
// a secret, not the secret (secret_name, token_ttl, password_length).
var aboutSecret = map[string]bool{
	"name": true, "names": true, "ref": true, "refs": true, "path": true, "paths": true, "file": true,
	"files": true, "filename": true, "dir": true, "type": true, "kind": true, "len": true,
	"length": true, "count": true, "size": true, "ttl": true, "timeout": true, "expiry": true,
	"expires": true, "expiresin": true, "expiresat": true, "expiration": true, "exp": true,
	"version": true, "policy": true, "min": true, "max": true, "rotation": true, "rotated": true,
	"age": true, "url": true, "uri": true, "endpoint": true, "source": true, "provider": true,
	"mount": true, "field": true, "env": true, "namespace": true, "store": true, "manager": true,
	"backend": true, "mode": true, "format": true, "strength": true, "hint": true, "required": true,
	"valid": true, "invalid": true, "enabled": true, "updated": true, "created": true,
	"changed": true, "reset": true, "label": true, "selector": true, "less": true, "izer": true,
	"ize": true, "ized": true, "izing": true, "ization": true, "present": true, "missing": true,
}

// notSecretTokens: what precedes "token" in keys of pagination and
// language models (next_page_token, max_tokens, prompt_tokens).
var notSecretTokens = []string{"page", "next", "continue", "cancel", "cancellation", "resume", "sync",
	"max", "num", "total", "prompt", "completion", "input", "output", "cached", "reasoning"}

// secretKey says whether a key names a secret, by its parts. A key that
// ends in a part about a secret (…_file, …Ref, …_name) names none.
func secretKey(key string) bool {
	parts := keyParts(key)
	if len(parts) == 0 || aboutSecret[parts[len(parts)-1]] {
		return false
	}
	for i, p := range parts {
		next, prev := "", ""
		if i+1 < len(parts) {
			next = parts[i+1]
		}
		if i > 0 {
			prev = parts[i-1]
		}
		if secretPart(prev, p, next) {
			return true
		}
	}
	return false
}

func secretPart(prev, p, next string) bool {
	for _, w := range secretWords {
		at := strings.Index(p, w)
		if at < 0 {
			continue
		}
		after, before := p[at+len(w):], p[:at]
		if after == "" {
			after = next
		}
		if before == "" {
			before = prev
		}
		if aboutSecret[after] || after == "s" && (w == "token" || w == "secret") {
			continue
		}
		if w == "token" && hasAnySuffix(before, notSecretTokens) {
			continue
		}
		return true
	}
	switch {
	case p == "pw" || p == "sig" || p == "cred" || p == "creds" || p == "pwd":
		return true
	case strings.HasSuffix(p, "pass") || strings.HasSuffix(p, "pwd") || strings.HasSuffix(p, "creds"):
		return !aboutSecret[next]
	case p == "session" && next == "id":
		return true
	case p == "key" || p == "keys":
		return keyQualifiers[prev] && !aboutSecret[next]
	case strings.HasSuffix(p, "key"):
		return keyQualifiers[p[:len(p)-3]] && !aboutSecret[next]
	}
	return false
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// keyParts splits a key at _ - . and camelCase, lower-cased:
// "X-Api-Key" → x api key, "clientSecret" → client secret, "APIKey" →
// api key, "DB_PASSWORD_B64" → db password b64.
func keyParts(key string) []string {
	var parts []string
	start := 0
	flush := func(end int) {
		if end > start {
			parts = append(parts, strings.ToLower(key[start:end]))
		}
	}
	isUpper := func(c byte) bool { return 'A' <= c && c <= 'Z' }
	isLower := func(c byte) bool { return 'a' <= c && c <= 'z' }
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ':
			flush(i)
			start = i + 1
		case i > start && isUpper(c) && (isLower(key[i-1]) || i+1 < len(key) && isLower(key[i+1]) && isUpper(key[i-1])):
			flush(i)
			start = i
		}
	}
	flush(len(key))
	return parts
}
