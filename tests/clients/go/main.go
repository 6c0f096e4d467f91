// Command sluice-go-clients runs one end-to-end scenario against a Kafka-compatible broker with a
// Go client: franz-go (kgo + kadm) or IBM Sarama. These scenarios' consumers use direct partition
// assignment; the consumer-group members (franz-group, sarama-group) are in group.go.
//
//	sluice-go-clients franz  --bootstrap HOST:PORT --topic T [--count N] [--partitions P]
//	sluice-go-clients sarama --bootstrap HOST:PORT --topic T [--count N] [--partitions P] [--idempotent]
//	sluice-go-clients franz-group|sarama-group --bootstrap HOST:PORT --topic T --group G --events F --stop-file S
//	sluice-go-clients franz-admin|sarama-admin --bootstrap HOST:PORT --topics a:1,b:3   (admin.go)
//
// Each step prints one line to stdout; the last line is "OK" when everything was verified.
// On failure the program prints "FAIL: ..." and exits 1.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

type opts struct {
	bootstrap  string
	topic      string
	count      int
	partitions int
	idempotent bool
	timeout    time.Duration
}

// acked is where the broker said a record landed.
type acked struct {
	partition int32
	offset    int64
}

// rec is one record as read back.
type rec struct {
	partition int32
	offset    int64
	key       string
	value     string
}

func key(seq int) string   { return fmt.Sprintf("k%d", seq) }
func value(seq int) string { return fmt.Sprintf("k%d|%d|xxxxxxxxxxxxxxxx", seq, seq) }

func fail(format string, a ...any) {
	fmt.Printf("FAIL: "+format+"\n", a...)
	os.Exit(1)
}

var startTime = time.Now()

// step prints one report line to stdout (and its time since start to stderr, for slow-step hunting).
func step(format string, a ...any) {
	fmt.Printf(format+"\n", a...)
	fmt.Fprintf(os.Stderr, "[%6.2fs] "+format+"\n", append([]any{time.Since(startTime).Seconds()}, a...)...)
}

// verify checks the read-back records: every seq exactly once, value matching key, offsets
// contiguous from 0 per partition, seq strictly increasing per partition (produce order), and
// every acknowledged (partition, offset) holding the acknowledged key.
func verify(o opts, recs []rec, acks map[string]acked) map[int32]int {
	var errs []string
	add := func(format string, a ...any) {
		if len(errs) < 25 {
			errs = append(errs, fmt.Sprintf(format, a...))
		}
	}
	nextOff := map[int32]int64{}
	lastSeq := map[int32]int{}
	seen := make(map[string]acked, len(recs))
	for _, r := range recs {
		if r.offset != nextOff[r.partition] {
			add("partition %d: offset %d where %d was expected", r.partition, r.offset, nextOff[r.partition])
		}
		nextOff[r.partition] = r.offset + 1
		if prev, dup := seen[r.key]; dup {
			add("key %q read twice: at %v and at (%d, %d)", r.key, prev, r.partition, r.offset)
		}
		seen[r.key] = acked{r.partition, r.offset}
		f := strings.Split(r.value, "|")
		if len(f) != 3 || f[0] != r.key || strings.Trim(f[2], "x") != "" {
			add("partition %d offset %d: value %.80q does not match key %q", r.partition, r.offset, r.value, r.key)
			continue
		}
		seq, err := strconv.Atoi(f[1])
		if err != nil || key(seq) != r.key || seq < 0 || seq >= o.count {
			add("partition %d offset %d: bad seq in %.80q", r.partition, r.offset, r.value)
			continue
		}
		if last, ok := lastSeq[r.partition]; ok && seq <= last {
			add("partition %d offset %d: seq %d after seq %d (order differs from produce order)", r.partition, r.offset, seq, last)
		}
		lastSeq[r.partition] = seq
	}
	missing := 0
	for s := 0; s < o.count; s++ {
		k := key(s)
		got, ok := seen[k]
		if !ok {
			if missing++; missing <= 5 {
				add("%s never read back", k)
			}
			continue
		}
		if a, ok := acks[k]; ok && a != got {
			add("%s acknowledged at (%d, %d) but read at (%d, %d)", k, a.partition, a.offset, got.partition, got.offset)
		}
	}
	if missing > 0 {
		add("%d produced records never read back", missing)
	}
	if len(recs) != o.count {
		add("read %d records, expected %d", len(recs), o.count)
	}
	counts := map[int32]int{}
	for p, n := range nextOff {
		counts[p] = int(n)
		if p < 0 || int(p) >= o.partitions {
			add("records from unexpected partition %d", p)
		}
	}
	if len(counts) != o.partitions {
		add("records in %d partitions, expected all %d", len(counts), o.partitions)
	}
	if len(errs) > 0 {
		fail("read-back verification (%d records, per-partition counts %s):\n  %s", len(recs), fmtCounts(counts),
			strings.Join(errs, "\n  "))
	}
	return counts
}

func fmtCounts(c map[int32]int) string {
	ps := make([]int, 0, len(c))
	for p := range c {
		ps = append(ps, int(p))
	}
	sort.Ints(ps)
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%d:%d", p, c[int32(p)])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sluice-go-clients franz|sarama|franz-group|sarama-group --bootstrap HOST:PORT --topic T [--count N] [--partitions P] [--idempotent]")
		os.Exit(2)
	}
	cmd := os.Args[1]
	if cmd == "franz-group" || cmd == "sarama-group" {
		runGroupCmd(cmd, os.Args[2:])
		return
	}
	if cmd == "franz-admin" || cmd == "sarama-admin" {
		runAdminCmd(cmd, os.Args[2:])
		return
	}
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	var o opts
	fs.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "bootstrap server")
	fs.StringVar(&o.topic, "topic", "go-test", "topic to create, use and delete")
	fs.IntVar(&o.count, "count", 20000, "messages to produce")
	fs.IntVar(&o.partitions, "partitions", 6, "partitions of the topic")
	fs.BoolVar(&o.idempotent, "idempotent", false, "sarama: Idempotent=true, acks=all, MaxOpenRequests=1, Version=V3_0_0_0")
	fs.DurationVar(&o.timeout, "timeout", 45*time.Second, "deadline of each phase")
	_ = fs.Parse(os.Args[2:])
	start := time.Now()
	switch cmd {
	case "franz":
		runFranz(o)
	case "sarama":
		runSarama(o)
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", cmd)
		os.Exit(2)
	}
	step("elapsed=%.1fs", time.Since(start).Seconds())
	step("OK")
}
