package main

import "runtime/debug"

// badgerVersion is the Badger module this binary was built with (its go.mod's).
func badgerVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/dgraph-io/badger/v4" {
				return dep.Version
			}
		}
	}
	return "(unknown)"
}
