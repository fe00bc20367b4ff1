//go:build race

package main

// raceBuilt is true in a race-built test binary: a script that bounds hgate's memory with
// ulimit -v skips there, as the race detector's shadow memory does not fit any bound.
const raceBuilt = true
