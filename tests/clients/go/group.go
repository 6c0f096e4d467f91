package main

// Consumer-group members for tests/clients/test_go.py, with the events file of groups.py:
//
//	ASSIGN <ts_ms> p,p,...          partitions added (REVOKE / LOST: removed; "-" for none)
//	REC <partition> <offset> <key>
//	COMMITTED <ts_ms> p=o,p=o,...   after a successful synchronous commit
//	COMMIT_FAILED <ts_ms> <what>
//
//	sluice-go-clients franz-group  --bootstrap B --topic T --group G --events F --stop-file S
//	sluice-go-clients sarama-group --bootstrap B --topic T --group G --events F --stop-file S
//
// Both keep the client's defaults except what the test scenario needs: manual commits after
// processing (franz-go: DisableAutoCommit + BlockRebalanceOnPoll, the documented way to commit
// before a rebalance revokes partitions; Sarama: AutoCommit.Enable=false + MarkMessage + Commit) and,
// for Sarama, Offsets.Initial=OffsetOldest (its default is OffsetNewest, which could skip records
// produced before a partition's first commit). franz-go's default balancer is cooperative-sticky;
// Sarama's is range (eager). Each exits 0 after leaving the group when the stop file appears.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

type groupOpts struct {
	bootstrap string
	topic     string
	group     string
	events    string
	stopFile  string
	debug     bool
	maxRun    time.Duration
}

// eventLog is the events file; safe for concurrent use (Sarama runs one goroutine per claim).
type eventLog struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
}

func openEventLog(path string) *eventLog {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fail("open events file: %v", err)
	}
	return &eventLog{f: f, w: bufio.NewWriterSize(f, 1<<16)}
}

func nowMs() int64 { return time.Now().UnixMilli() }

func (l *eventLog) line(s string, flush bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.WriteString(s)
	if flush {
		l.w.Flush()
	}
}

func (l *eventLog) ownership(kind string, ps []int32) {
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	list := strings.Join(s, ",")
	if list == "" {
		list = "-"
	}
	l.line(fmt.Sprintf("%s %d %s\n", kind, nowMs(), list), true)
}

func (l *eventLog) record(p int32, o int64, k []byte) {
	l.line(fmt.Sprintf("REC %d %d %s\n", p, o, k), false)
}

func (l *eventLog) flush() { l.line("", true) }

func (l *eventLog) committed(next map[int32]int64) {
	var b strings.Builder
	for p, o := range next {
		fmt.Fprintf(&b, "%d=%d,", p, o)
	}
	l.line(fmt.Sprintf("COMMITTED %d %s\n", nowMs(), b.String()), true)
}

func (l *eventLog) commitFailed(what string) {
	l.line(fmt.Sprintf("COMMIT_FAILED %d %s\n", nowMs(), strings.ReplaceAll(what, "\n", " ")), true)
}

func stopRequested(o groupOpts) bool {
	_, err := os.Stat(o.stopFile)
	return err == nil
}

func runGroupCmd(cmd string, argv []string) {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	var o groupOpts
	fs.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "bootstrap server")
	fs.StringVar(&o.topic, "topic", "", "topic to subscribe to")
	fs.StringVar(&o.group, "group", "", "group id")
	fs.StringVar(&o.events, "events", "", "events file (appended)")
	fs.StringVar(&o.stopFile, "stop-file", "", "leave the group and exit when this file exists")
	fs.BoolVar(&o.debug, "debug", false, "client debug logging to stderr")
	fs.DurationVar(&o.maxRun, "max-runtime", 5*time.Minute, "give up (exit 1) after this long")
	_ = fs.Parse(argv)
	if o.topic == "" || o.group == "" || o.events == "" || o.stopFile == "" {
		fmt.Fprintln(os.Stderr, "usage: sluice-go-clients "+cmd+" --bootstrap B --topic T --group G --events F --stop-file S [--debug]")
		os.Exit(2)
	}
	time.AfterFunc(o.maxRun, func() { fail("%s: max runtime %s reached", cmd, o.maxRun) })
	ev := openEventLog(o.events)
	switch cmd {
	case "franz-group":
		franzGroup(o, ev)
	case "sarama-group":
		saramaGroup(o, ev)
	}
	ev.flush()
	fmt.Println("stopped")
}

func partitionsOf(m map[string][]int32, topic string) []int32 {
	return append([]int32(nil), m[topic]...)
}

func franzGroup(o groupOpts, ev *eventLog) {
	level := kgo.LogLevelInfo
	if o.debug {
		level = kgo.LogLevelDebug
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(o.bootstrap),
		kgo.ConsumerGroup(o.group),
		kgo.ConsumeTopics(o.topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, nil)),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			ev.ownership("ASSIGN", partitionsOf(m, o.topic))
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			// Every processed record was committed before AllowRebalance: nothing to commit here.
			ev.ownership("REVOKE", partitionsOf(m, o.topic))
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			ev.ownership("LOST", partitionsOf(m, o.topic))
		}),
	)
	if err != nil {
		fail("franz: new client: %v", err)
	}
	for !stopRequested(o) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fetches := cl.PollRecords(ctx, 500)
		cancel()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fmt.Fprintf(os.Stderr, "franz: fetch %s/%d: %v\n", t, p, err)
			}
		})
		var recs []*kgo.Record
		next := map[int32]int64{}
		fetches.EachRecord(func(r *kgo.Record) {
			ev.record(r.Partition, r.Offset, r.Key)
			next[r.Partition] = r.Offset + 1
			recs = append(recs, r)
		})
		if len(recs) > 0 {
			ev.flush()
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := cl.CommitRecords(cctx, recs...); err != nil {
				ev.commitFailed(err.Error())
			} else {
				ev.committed(next)
			}
			ccancel()
		}
		cl.AllowRebalance()
	}
	cl.CloseAllowingRebalance() // LeaveGroup; the final revoke is logged by OnPartitionsRevoked
}

type saramaHandler struct {
	o  groupOpts
	ev *eventLog
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.ev.ownership("ASSIGN", partitionsOf(s.Claims(), h.o.topic))
	return nil
}

func (h *saramaHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	h.ev.ownership("REVOKE", partitionsOf(s.Claims(), h.o.topic))
	return nil
}

// ConsumeClaim processes what has arrived (up to 500 records), then marks and commits
// synchronously; it returns when the session ends (rebalance or Close).
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		var batch []*sarama.ConsumerMessage
		select {
		case <-s.Context().Done():
			return nil
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			batch = append(batch, m)
		}
	drain:
		for len(batch) < 500 {
			select {
			case m, ok := <-c.Messages():
				if !ok {
					break drain
				}
				batch = append(batch, m)
			default:
				break drain
			}
		}
		for _, m := range batch {
			h.ev.record(m.Partition, m.Offset, m.Key)
		}
		h.ev.flush()
		last := batch[len(batch)-1]
		s.MarkMessage(last, "")
		// Commit is synchronous; Sarama reports its failures on the group's Errors() channel
		// (logged as COMMIT_FAILED by saramaGroup).
		s.Commit()
		h.ev.committed(map[int32]int64{last.Partition: last.Offset + 1})
	}
}

func saramaGroup(o groupOpts, ev *eventLog) {
	if o.debug {
		sarama.DebugLogger = log.New(os.Stderr, "[sarama debug] ", log.LstdFlags|log.Lmicroseconds)
	}
	sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	cfg := sarama.NewConfig() // defaults: range balance strategy, session timeout 10 s, heartbeat 3 s
	cfg.ClientID = "sluice-go-sarama-group"
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Return.Errors = true
	g, err := sarama.NewConsumerGroup([]string{o.bootstrap}, o.group, cfg)
	if err != nil {
		fail("sarama: new consumer group: %v", err)
	}
	go func() {
		for err := range g.Errors() {
			ev.commitFailed(fmt.Sprintf("sarama-error: %v", err))
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := &saramaHandler{o: o, ev: ev}
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{o.topic}, h); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				fmt.Fprintf(os.Stderr, "sarama: consume: %v\n", err)
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	for !stopRequested(o) {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	if err := g.Close(); err != nil { // LeaveGroup
		fail("sarama: close: %v", err)
	}
}
