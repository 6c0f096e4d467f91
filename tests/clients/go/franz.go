package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func runFranz(o opts) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*o.timeout)
	defer cancel()

	// Admin client and producer: franz-go defaults (idempotent, acks=all).
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.bootstrap), kgo.DefaultProduceTopic(o.topic))
	if err != nil {
		fail("franz: new client: %v", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// DescribeCluster (raw request: kadm has no helper for it).
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		fail("franz: DescribeCluster: %v", err)
	}
	if e := kerrOf(dresp.ErrorCode); e != nil {
		fail("franz: DescribeCluster error: %v", e)
	}
	ids := []int32{}
	for _, b := range dresp.Brokers {
		ids = append(ids, b.NodeID)
	}
	step("describe-cluster cluster_id=%s controller=%d brokers=%v", dresp.ClusterID, dresp.ControllerID, ids)

	created, err := adm.CreateTopics(ctx, int32(o.partitions), 1, nil, o.topic)
	if err != nil {
		fail("franz: CreateTopics: %v", err)
	}
	ct, err := created.On(o.topic, nil)
	if err != nil {
		fail("franz: CreateTopics: %v", err)
	}
	if ct.Err != nil {
		fail("franz: CreateTopics %s: %v %s", o.topic, ct.Err, ct.ErrMessage)
	}
	step("created topic=%s partitions=%d", o.topic, o.partitions)

	// Produce.
	t0 := time.Now()
	var mu sync.Mutex
	acks := make(map[string]acked, o.count)
	var firstErr error
	failed := 0
	pctx, pcancel := context.WithTimeout(ctx, o.timeout)
	defer pcancel()
	for i := 0; i < o.count; i++ {
		r := &kgo.Record{Key: []byte(key(i)), Value: []byte(value(i))}
		cl.Produce(pctx, r, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			acks[string(r.Key)] = acked{r.Partition, r.Offset}
		})
	}
	if err := cl.Flush(pctx); err != nil {
		fail("franz: flush: %v (acked=%d failed=%d first error: %v)", err, len(acks), failed, firstErr)
	}
	step("produced acked=%d failed=%d in %.1fs", len(acks), failed, time.Since(t0).Seconds())
	if failed > 0 || len(acks) != o.count {
		fail("franz: produce: acked=%d failed=%d first error: %v", len(acks), failed, firstErr)
	}

	// End offsets must match what was acknowledged.
	ends, err := adm.ListEndOffsets(ctx, o.topic)
	if err != nil {
		fail("franz: ListEndOffsets: %v", err)
	}
	var endSum int64
	ends.Each(func(lo kadm.ListedOffset) {
		if lo.Err != nil {
			fail("franz: ListEndOffsets partition %d: %v", lo.Partition, lo.Err)
		}
		endSum += lo.Offset
	})
	step("end-offsets total=%d", endSum)
	if endSum != int64(o.count) {
		fail("franz: end offsets sum to %d, expected %d", endSum, o.count)
	}

	// Consume with direct partition assignment from the start.
	t0 = time.Now()
	parts := map[int32]kgo.Offset{}
	for p := 0; p < o.partitions; p++ {
		parts[int32(p)] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(o.bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: parts}))
	if err != nil {
		fail("franz: new consumer: %v", err)
	}
	recs := make([]rec, 0, o.count)
	cctx, ccancel := context.WithTimeout(ctx, o.timeout)
	defer ccancel()
	for len(recs) < o.count {
		fetches := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				fail("franz: fetch %s/%d: %v", t, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			recs = append(recs, rec{r.Partition, r.Offset, string(r.Key), string(r.Value)})
		})
	}
	// A short extra poll: nothing more may arrive.
	xctx, xcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	cons.PollFetches(xctx).EachRecord(func(r *kgo.Record) {
		recs = append(recs, rec{r.Partition, r.Offset, string(r.Key), string(r.Value)})
	})
	xcancel()
	cons.Close()
	counts := verify(o, recs, acks)
	step("consumed records=%d partitions=%s in %.1fs", len(recs), fmtCounts(counts), time.Since(t0).Seconds())
	step("verified exactly-once order=per-partition acked_checked=%d", len(acks))

	// Admin: list topics, describe the topic, its configs.
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		fail("franz: ListTopics: %v", err)
	}
	td, ok := topics[o.topic]
	if !ok {
		fail("franz: ListTopics does not list %s: %v", o.topic, topics.Names())
	}
	if td.Err != nil || len(td.Partitions) != o.partitions {
		fail("franz: ListTopics %s: err=%v partitions=%d", o.topic, td.Err, len(td.Partitions))
	}
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 {
			fail("franz: partition %d: leader=%d err=%v", p.Partition, p.Leader, p.Err)
		}
	}
	step("list-topics has=%s partitions=%d", o.topic, len(td.Partitions))
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		fail("franz: Metadata: %v", err)
	}
	step("metadata cluster=%s controller=%d brokers=%v", meta.Cluster, meta.Controller, meta.Brokers.NodeIDs())

	rcs, err := adm.DescribeTopicConfigs(ctx, o.topic)
	if err != nil {
		fail("franz: DescribeTopicConfigs: %v", err)
	}
	rc, err := rcs.On(o.topic, nil)
	if err != nil || rc.Err != nil {
		fail("franz: DescribeTopicConfigs %s: %v %v %s", o.topic, err, rc.Err, rc.ErrMessage)
	}
	found := map[string]string{}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" || c.Key == "retention.ms" || c.Key == "segment.bytes" {
			c := c
			found[c.Key] = c.MaybeValue()
		}
	}
	step("describe-configs entries=%d cleanup.policy=%s retention.ms=%s segment.bytes=%s",
		len(rc.Configs), found["cleanup.policy"], found["retention.ms"], found["segment.bytes"])
	if len(rc.Configs) == 0 {
		fail("franz: DescribeTopicConfigs returned no configs")
	}

	// Delete.
	dels, err := adm.DeleteTopics(ctx, o.topic)
	if err != nil {
		fail("franz: DeleteTopics: %v", err)
	}
	dt, err := dels.On(o.topic, nil)
	if err != nil || dt.Err != nil {
		fail("franz: DeleteTopics %s: %v %v %s", o.topic, err, dt.Err, dt.ErrMessage)
	}
	// The deleted topic must disappear from the listing. kadm answers ListTopics from kgo's
	// metadata cache (MetadataMinAge, 5 s), so ask through a fresh client.
	fresh, err := kgo.NewClient(kgo.SeedBrokers(o.bootstrap))
	if err != nil {
		fail("franz: new client: %v", err)
	}
	defer fresh.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		topics, err = kadm.NewClient(fresh).ListTopics(ctx)
		if err == nil && !topics.Has(o.topic) {
			break
		}
		if time.Now().After(deadline) {
			fail("franz: %s still listed after delete (err=%v)", o.topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	step("deleted topic=%s", o.topic)
}

func kerrOf(code int16) error {
	return kerr.ErrorForCode(code)
}
