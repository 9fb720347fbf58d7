// porcupine-first-write: judges a first-write history (the NDJSON `loadbearing conform`
// reads: one operation a line with "call" and "ret") with Porcupine, for `loadbearing bench
// --porcupine`, which runs it beside our own checker on the same histories.
//
// The model is the guarded first write as an atomic compare-and-set register per key: a
// Persist of offset o lands when the key has no row or its row's offset is at most o, and is
// refused with the stored offset otherwise; a Read returns the row (or none). An operation that
// never returned ("ret": null) returns at infinity and may or may not have landed, as
// Porcupine's documentation advises for operations of unknown outcome.
//
// Usage: porcupine-first-write [-timeout 60s] HISTORY.ndjson
// Prints one line: "<ok|illegal|unknown> <operations> <milliseconds checking>".
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

// line is one NDJSON line of the first_write vocabulary with its times.
type line struct {
	Call    int64   `json:"call"`
	Ret     *int64  `json:"ret"`
	Action  string  `json:"action"`
	Writer  string  `json:"writer"`
	Key     string  `json:"key"`
	Offset  int64   `json:"offset"`
	Outcome *string `json:"outcome"`
	Stored  *int64  `json:"stored"`
}

// absent is the row of a key nobody wrote.
const absent = int64(-1)

type input struct {
	key    string
	read   bool
	offset int64
}

type output struct {
	unknown bool
	applied bool
	stored  int64 // a refusal's stored offset, or what a read found
}

func step(state, in, out interface{}) (bool, interface{}) {
	row, i, o := state.(int64), in.(input), out.(output)
	if i.read {
		return o.unknown || o.stored == row, row
	}
	lands := row == absent || row <= i.offset
	next := row
	if lands {
		next = i.offset
	}
	if o.unknown {
		return true, next
	}
	if o.applied {
		return lands, next
	}
	return !lands && o.stored == row, row
}

func partition(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	var keys []string
	for _, op := range history {
		k := op.Input.(input).key
		if _, seen := byKey[k]; !seen {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	parts := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, byKey[k])
	}
	return parts
}

func main() {
	timeout := flag.Duration("timeout", 0, "give up after this long (0: never)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: porcupine-first-write [-timeout 60s] HISTORY.ndjson")
		os.Exit(2)
	}
	file, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var ops []porcupine.Operation
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; scanner.Scan(); n++ {
		if len(scanner.Bytes()) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(scanner.Bytes(), &l); err != nil {
			fmt.Fprintf(os.Stderr, "line %d: %v\n", n, err)
			os.Exit(2)
		}
		in := input{key: l.Key, read: l.Action == "Read", offset: l.Offset}
		out := output{unknown: l.Ret == nil, stored: absent}
		if l.Stored != nil {
			out.stored = *l.Stored
		}
		if l.Outcome != nil {
			out.applied = *l.Outcome == "applied"
		}
		ret := int64(math.MaxInt64)
		if l.Ret != nil {
			ret = *l.Ret
		}
		// One client id per operation: Porcupine uses them only to draw.
		ops = append(ops, porcupine.Operation{ClientId: len(ops), Input: in, Call: l.Call, Output: out, Return: ret})
	}
	model := porcupine.Model{
		Partition: partition,
		Init:      func() interface{} { return absent },
		Step:      step,
		Hash:      func(state interface{}) uint64 { return uint64(state.(int64)) },
	}
	started := time.Now()
	result := porcupine.CheckOperationsTimeout(model, ops, *timeout)
	took := time.Since(started)
	verdict := map[porcupine.CheckResult]string{porcupine.Ok: "ok", porcupine.Illegal: "illegal", porcupine.Unknown: "unknown"}[result]
	fmt.Printf("%s %d %.3f\n", verdict, len(ops), float64(took.Microseconds())/1000)
}
