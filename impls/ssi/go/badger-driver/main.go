// Command badger-driver drives Badger (github.com/dgraph-io/badger/v4, from the Go module
// proxy) for loadbearing's isolation tier (impls/ssi/src/badger.rs): one request a line on
// stdin, one answer a line on stdout, so each of a workload's transactions can be driven one
// step at a time from Rust.
//
// Badger's read-write transactions are optimistic: a transaction reads the versions committed
// before it began, records the keys it read, and at commit is refused (ErrConflict) if any of
// them was committed by another transaction since; its documentation calls this serializable
// snapshot isolation. The database is in memory.
//
// Requests (keys have no spaces; values and writers are integers):
//
//	begin T             a read-write transaction named T
//	get T K             -> "val V W" | "none"
//	set T K V W         -> "ok"
//	commit T            -> "ok" | "err ..."
//	discard T           -> "ok"
//	load K V W          a committed write outside the workload's transactions
//	read K              the last committed version -> "val V W" | "none"
//	reset               drops every key
//
// Any failure answers "err " and Badger's words; the driver never exits on one.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
)

func encode(v int64, w int32) []byte {
	b := make([]byte, 12)
	binary.LittleEndian.PutUint64(b[:8], uint64(v))
	binary.LittleEndian.PutUint32(b[8:], uint32(w))
	return b
}

func decode(b []byte) (int64, int32, error) {
	if len(b) != 12 {
		return 0, 0, fmt.Errorf("a value of %d bytes is not ours", len(b))
	}
	return int64(binary.LittleEndian.Uint64(b[:8])), int32(binary.LittleEndian.Uint32(b[8:])), nil
}

type driver struct {
	db   *badger.DB
	txns map[string]*badger.Txn
}

func (d *driver) get(txn *badger.Txn, key string) string {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return "none"
	}
	if err != nil {
		return "err " + err.Error()
	}
	val, err := item.ValueCopy(nil)
	if err != nil {
		return "err " + err.Error()
	}
	v, w, err := decode(val)
	if err != nil {
		return "err " + err.Error()
	}
	return fmt.Sprintf("val %d %d", v, w)
}

func parseVW(v, w string) (int64, int32, error) {
	value, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, 0, err
	}
	writer, err := strconv.ParseInt(w, 10, 32)
	return value, int32(writer), err
}

func (d *driver) handle(f []string) string {
	need := map[string]int{"begin": 2, "get": 3, "set": 5, "del": 3, "commit": 2, "discard": 2, "load": 4, "read": 2, "reset": 1}
	n, known := need[f[0]]
	if !known {
		return "err unknown request " + f[0]
	}
	if len(f) != n {
		return fmt.Sprintf("err %s takes %d words", f[0], n)
	}
	switch f[0] {
	case "begin":
		d.txns[f[1]] = d.db.NewTransaction(true)
		return "ok"
	case "get", "set", "del", "commit", "discard":
		txn, open := d.txns[f[1]]
		if !open {
			return "err no transaction " + f[1]
		}
		switch f[0] {
		case "get":
			return d.get(txn, f[2])
		case "set":
			v, w, err := parseVW(f[3], f[4])
			if err != nil {
				return "err " + err.Error()
			}
			if err := txn.Set([]byte(f[2]), encode(v, w)); err != nil {
				return "err " + err.Error()
			}
			return "ok"
		case "del":
			if err := txn.Delete([]byte(f[2])); err != nil {
				return "err " + err.Error()
			}
			return "ok"
		case "commit":
			delete(d.txns, f[1])
			if err := txn.Commit(); err != nil {
				return "err " + err.Error()
			}
			return "ok"
		default:
			delete(d.txns, f[1])
			txn.Discard()
			return "ok"
		}
	case "load":
		v, w, err := parseVW(f[2], f[3])
		if err != nil {
			return "err " + err.Error()
		}
		err = d.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(f[1]), encode(v, w)) })
		if err != nil {
			return "err " + err.Error()
		}
		return "ok"
	case "read":
		answer := ""
		err := d.db.View(func(txn *badger.Txn) error { answer = d.get(txn, f[1]); return nil })
		if err != nil {
			return "err " + err.Error()
		}
		return answer
	default: // reset
		for name, txn := range d.txns {
			txn.Discard()
			delete(d.txns, name)
		}
		if err := d.db.DropAll(); err != nil {
			return "err " + err.Error()
		}
		return "ok"
	}
}

func main() {
	opts := badger.DefaultOptions("").WithInMemory(true).WithLogger(nil).WithMemTableSize(4 << 20).WithValueThreshold(1 << 10)
	db, err := badger.Open(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "badger-driver: open:", err)
		os.Exit(2)
	}
	defer db.Close()
	d := &driver{db: db, txns: map[string]*badger.Txn{}}
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready badger", badgerVersion())
	out.Flush()
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		fmt.Fprintln(out, d.handle(f))
		out.Flush()
	}
}
