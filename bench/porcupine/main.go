// Command porcupine-bench judges a first-write history file (the NDJSON `loadbearing conform
// --trace` reads, docs/trace-format.md) with Porcupine, for `loadbearing bench --histories
// --porcupine`. It prints one line of JSON: {"seconds":…,"check_seconds":…,"verdict":"…"}.
//
// The model is CasFirstWriteAtomic's row (specs/src/first_write/atomic.rs), one key a
// partition: the state is the stored offset (-1: no row); a `Persist` of offset o applies iff
// there is no row or the row holds at most o (`IF offset <= o`), so one that says `applied`
// must pass that guard and stores o, one that says `not_applied` (or `row_absent`) must fail it
// (and a reported `stored` must be the row's offset), one `not_sent` changes nothing. A write
// whose reply never came (`"ret": null`) returns at the end of time, and applies where the
// guard lets it; a `Read` must see the row. A sequence (no `call`) is read as a history: event
// i is called and returns at 2i, one with no outcome never returns.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

// line is one event of the trace, as written on the wire.
type line struct {
	Call    *int64          `json:"call"`
	Ret     *int64          `json:"ret"`
	Key     json.RawMessage `json:"key"`
	Action  string          `json:"action"`
	Offset  int64           `json:"offset"`
	Outcome *string         `json:"outcome"`
	Stored  *int64          `json:"stored"`
}

// op is what the model reads of an operation: its input and what it observed, together.
type op struct {
	read    bool
	offset  int64
	outcome string // "" when unknown
	stored  int64  // -1: absent
}

const none = int64(-1)

func applies(row, offset int64) bool {
	return row == none || row <= offset
}

func step(state, input, _ interface{}) (bool, interface{}) {
	row := state.(int64)
	o := input.(op)
	if o.read {
		return o.stored == row, row
	}
	switch o.outcome {
	case "":
		if applies(row, o.offset) {
			return true, o.offset
		}
		return true, row
	case "applied":
		if !applies(row, o.offset) {
			return false, row
		}
		return true, o.offset
	case "not_applied", "row_absent":
		if applies(row, o.offset) {
			return false, row
		}
		return o.stored == none || o.stored == row, row
	case "not_sent":
		return true, row
	}
	return false, row
}

var model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		parts := map[string][]porcupine.Operation{}
		var order []string
		for _, h := range history {
			k := h.Metadata.(string)
			if _, ok := parts[k]; !ok {
				order = append(order, k)
			}
			parts[k] = append(parts[k], h)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, parts[k])
		}
		return out
	},
	Init:  func() interface{} { return none },
	Step:  step,
	Equal: func(a, b interface{}) bool { return a.(int64) == b.(int64) },
	Hash:  func(s interface{}) uint64 { return uint64(s.(int64)) },
}

func read(path string) ([]porcupine.Operation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	var ops []porcupine.Operation
	n := int64(0)
	for scanner.Scan() {
		if len(scanner.Bytes()) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(scanner.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("line %d: %v", n+1, err)
		}
		o := op{read: l.Action == "Read", offset: l.Offset, stored: none}
		if l.Action != "Read" && l.Action != "Persist" {
			return nil, fmt.Errorf("line %d: %s is no step of the atomic upsert", n+1, l.Action)
		}
		if l.Outcome != nil {
			o.outcome = *l.Outcome
		}
		if l.Stored != nil {
			o.stored = *l.Stored
		}
		var call, ret int64
		if l.Call != nil {
			call, ret = *l.Call, math.MaxInt64
			if l.Ret != nil {
				ret = *l.Ret
			}
		} else {
			call, ret = 2*n, 2*n
			if !o.read && o.outcome == "" {
				ret = math.MaxInt64
			}
		}
		ops = append(ops, porcupine.Operation{
			ClientId: int(n),
			Input:    o,
			Call:     call,
			Return:   ret,
			Metadata: string(l.Key),
		})
		n++
	}
	return ops, scanner.Err()
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: porcupine-bench HISTORY.ndjson")
		os.Exit(2)
	}
	started := time.Now()
	ops, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	checked := time.Now()
	result := porcupine.CheckOperationsTimeout(model, ops, 0)
	done := time.Now()
	verdict := map[porcupine.CheckResult]string{
		porcupine.Ok:      "linearizable",
		porcupine.Illegal: "not linearizable",
		porcupine.Unknown: "unknown",
	}[result]
	out, _ := json.Marshal(map[string]interface{}{
		"seconds":       done.Sub(started).Seconds(),
		"check_seconds": done.Sub(checked).Seconds(),
		"operations":    len(ops),
		"verdict":       verdict,
	})
	fmt.Println(string(out))
}
