// Package release holds the tests of how herald is released: the GitHub
// Actions workflows (checked by actionlint), the versions that must
// agree (the chart's version and appVersion, the image tag, the
// changelog). It has no code of its own.
package release
