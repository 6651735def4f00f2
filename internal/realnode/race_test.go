//go:build race

package realnode

// raceEnabled: the tests run with -race, and so does the herald binary
// they build (make test).
const raceEnabled = true
