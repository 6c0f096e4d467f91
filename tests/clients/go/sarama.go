package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

func saramaConfig(o opts) *sarama.Config {
	cfg := sarama.NewConfig() // defaults: acks=1 (WaitForLocal), hash partitioner, default Version
	cfg.ClientID = "sluice-go-sarama"
	if o.idempotent {
		cfg.Version = sarama.V3_0_0_0
		cfg.Producer.Idempotent = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Net.MaxOpenRequests = 1
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	return cfg
}

func runSarama(o opts) {
	cfg := saramaConfig(o)
	step("sarama version=%s idempotent=%v acks=%d", cfg.Version, cfg.Producer.Idempotent, cfg.Producer.RequiredAcks)
	client, err := sarama.NewClient([]string{o.bootstrap}, cfg)
	if err != nil {
		fail("sarama: new client: %v", err)
	}
	defer client.Close()
	adm, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		fail("sarama: new cluster admin: %v", err)
	}

	brokers, controller, err := adm.DescribeCluster()
	if err != nil {
		fail("sarama: DescribeCluster: %v", err)
	}
	ids := []int32{}
	for _, b := range brokers {
		ids = append(ids, b.ID())
	}
	step("describe-cluster controller=%d brokers=%v", controller, ids)

	if err := adm.CreateTopic(o.topic, &sarama.TopicDetail{NumPartitions: int32(o.partitions), ReplicationFactor: 1}, false); err != nil {
		fail("sarama: CreateTopic %s: %v", o.topic, err)
	}
	step("created topic=%s partitions=%d", o.topic, o.partitions)

	// Produce with an AsyncProducer, collecting every acknowledgement.
	t0 := time.Now()
	prod, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		fail("sarama: new producer: %v", err)
	}
	acks := make(map[string]acked, o.count)
	failed := 0
	var firstErr error
	var wg sync.WaitGroup
	// Every message answered (acknowledged or failed): closed once `answered` reaches o.count.
	var answered atomic.Int64
	allAnswered := make(chan struct{})
	answer := func() {
		if answered.Add(1) == int64(o.count) {
			close(allAnswered)
		}
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m := range prod.Successes() {
			k, _ := m.Key.Encode()
			acks[string(k)] = acked{m.Partition, m.Offset}
			answer()
		}
	}()
	go func() {
		defer wg.Done()
		for e := range prod.Errors() {
			failed++
			if firstErr == nil {
				firstErr = e.Err
			}
			answer()
		}
	}()
	timer := time.AfterFunc(o.timeout, func() { fail("sarama: produce did not finish within %s", o.timeout) })
	for i := 0; i < o.count; i++ {
		prod.Input() <- &sarama.ProducerMessage{Topic: o.topic, Key: sarama.StringEncoder(key(i)),
			Value: sarama.StringEncoder(value(i))}
	}
	// Close only once every message is answered: Sarama fails a message still being retried at
	// close ("in process of shutting down"), and a produce right after CreateTopic can be retried
	// while the new partitions' leaders propagate.
	if o.count > 0 {
		<-allAnswered
	}
	prod.AsyncClose()
	wg.Wait()
	timer.Stop()
	step("produced acked=%d failed=%d in %.1fs", len(acks), failed, time.Since(t0).Seconds())
	if failed > 0 || len(acks) != o.count {
		fail("sarama: produce: acked=%d failed=%d first error: %v", len(acks), failed, firstErr)
	}

	// Consume each partition from the oldest offset up to its high-water mark.
	t0 = time.Now()
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		fail("sarama: new consumer: %v", err)
	}
	recs := make([]rec, 0, o.count)
	var endSum int64
	for p := int32(0); p < int32(o.partitions); p++ {
		hwm, err := client.GetOffset(o.topic, p, sarama.OffsetNewest)
		if err != nil {
			fail("sarama: GetOffset newest %d: %v", p, err)
		}
		low, err := client.GetOffset(o.topic, p, sarama.OffsetOldest)
		if err != nil {
			fail("sarama: GetOffset oldest %d: %v", p, err)
		}
		if low != 0 {
			fail("sarama: partition %d starts at %d, expected 0", p, low)
		}
		endSum += hwm
		if hwm == 0 {
			continue
		}
		pc, err := cons.ConsumePartition(o.topic, p, sarama.OffsetOldest)
		if err != nil {
			fail("sarama: ConsumePartition %d: %v", p, err)
		}
		deadline := time.After(o.timeout)
	loop:
		for {
			select {
			case m := <-pc.Messages():
				recs = append(recs, rec{m.Partition, m.Offset, string(m.Key), string(m.Value)})
				if m.Offset+1 >= hwm {
					break loop
				}
			case e := <-pc.Errors():
				fail("sarama: consume partition %d: %v", p, e.Err)
			case <-deadline:
				fail("sarama: partition %d: read %d records so far, high-water mark %d, not reached within %s", p, len(recs), hwm, o.timeout)
			}
		}
		if err := pc.Close(); err != nil {
			fail("sarama: close partition consumer %d: %v", p, err)
		}
	}
	_ = cons.Close()
	step("end-offsets total=%d", endSum)
	if endSum != int64(o.count) {
		fail("sarama: end offsets sum to %d, expected %d", endSum, o.count)
	}
	counts := verify(o, recs, acks)
	step("consumed records=%d partitions=%s in %.1fs", len(recs), fmtCounts(counts), time.Since(t0).Seconds())
	step("verified exactly-once order=per-partition acked_checked=%d", len(acks))

	// Admin: list topics, describe the topic's configs.
	topics, err := adm.ListTopics()
	if err != nil {
		fail("sarama: ListTopics: %v", err)
	}
	td, ok := topics[o.topic]
	if !ok || td.NumPartitions != int32(o.partitions) {
		fail("sarama: ListTopics: %s present=%v partitions=%d", o.topic, ok, td.NumPartitions)
	}
	step("list-topics has=%s partitions=%d", o.topic, td.NumPartitions)
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: o.topic})
	if err != nil {
		fail("sarama: DescribeConfig %s: %v", o.topic, err)
	}
	if len(entries) == 0 {
		fail("sarama: DescribeConfig %s returned no entries", o.topic)
	}
	step("describe-configs entries=%d", len(entries))

	if err := adm.DeleteTopic(o.topic); err != nil {
		fail("sarama: DeleteTopic %s: %v", o.topic, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		topics, err = adm.ListTopics()
		if err == nil {
			if _, still := topics[o.topic]; !still {
				break
			}
		}
		if time.Now().After(deadline) {
			fail("sarama: %s still listed after delete (err=%v)", o.topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	step("deleted topic=%s", o.topic)
}
