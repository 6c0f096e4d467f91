package main

// The operator's view of the broker through each Go client's admin API: list topics, describe the
// cluster and describe topics, as tools built on franz-go's kadm or Sarama's ClusterAdmin call them.
//
//	sluice-go-clients franz-admin|sarama-admin --bootstrap HOST:PORT --topics a:1,b:3
//
// The topics are created with the same client's admin API first. One line "VIEW {json}" carries
// what the client saw (test_go.py checks the values); the last line is "OK".

import (
	"context"
	"encoding/json"
	"flag"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type viewBroker struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

type viewPartition struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
}

// clusterView is what one client reported. ClusterIDs maps the call to the cluster id it returned,
// so the test can check they agree; Listed is every listed topic with its partition count.
type clusterView struct {
	Client     string                     `json:"client"`
	ClusterIDs map[string]string          `json:"cluster_ids"`
	Controller int32                      `json:"controller"`
	Brokers    []viewBroker               `json:"brokers"`
	Listed     map[string]int             `json:"listed"`
	Described  map[string][]viewPartition `json:"described"`
}

func parseTopics(spec string) map[string]int32 {
	topics := map[string]int32{}
	for _, t := range strings.Split(spec, ",") {
		name, n, ok := strings.Cut(t, ":")
		p, err := strconv.Atoi(n)
		if !ok || err != nil || name == "" {
			fail("bad --topics entry %q (want name:partitions)", t)
		}
		topics[name] = int32(p)
	}
	return topics
}

func topicNames(topics map[string]int32) []string {
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	return names
}

// waitLed polls leaders (topic -> each partition's leader) until every topic has its partition
// count with a leader (>= 0) for each, or fails after timeout.
func waitLed(client string, timeout time.Duration, leaders func() (map[string][]int32, error), topics map[string]int32) {
	deadline := time.Now().Add(timeout)
	for {
		got, err := leaders()
		ready := err == nil
		for name, partitions := range topics {
			ls := got[name]
			ready = ready && len(ls) == int(partitions)
			for _, l := range ls {
				ready = ready && l >= 0
			}
		}
		if ready {
			return
		}
		if time.Now().After(deadline) {
			fail("%s: created topics not led within %v: %v (err %v)", client, timeout, got, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func runAdminCmd(cmd string, argv []string) {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "bootstrap server")
	spec := fs.String("topics", "", "topics to create and describe, name:partitions,...")
	timeout := fs.Duration("timeout", 45*time.Second, "deadline")
	_ = fs.Parse(argv)
	topics := parseTopics(*spec)
	var v clusterView
	switch cmd {
	case "franz-admin":
		v = franzView(*bootstrap, topics, *timeout)
	case "sarama-admin":
		v = saramaView(*bootstrap, topics)
	}
	out, err := json.Marshal(v)
	if err != nil {
		fail("encoding the view: %v", err)
	}
	step("VIEW %s", out)
	step("OK")
	os.Exit(0)
}

func franzView(bootstrap string, topics map[string]int32, timeout time.Duration) clusterView {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		fail("franz: new client: %v", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for name, partitions := range topics {
		created, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
		if err != nil || created.Err != nil {
			fail("franz: CreateTopic %s: %v %v %s", name, err, created.Err, created.ErrMessage)
		}
	}
	// Kafka publishes a created topic to its metadata cache asynchronously: wait, as tools do,
	// until Metadata shows every created topic with all its partitions led.
	waitLed("franz", timeout, func() (map[string][]int32, error) {
		md, err := adm.Metadata(ctx, topicNames(topics)...)
		leaders := map[string][]int32{}
		for name, td := range md.Topics {
			if td.Err == nil {
				for _, p := range td.Partitions {
					leaders[name] = append(leaders[name], p.Leader)
				}
			}
		}
		return leaders, err
	}, topics)
	v := clusterView{Client: "franz-go kadm", ClusterIDs: map[string]string{}, Listed: map[string]int{},
		Described: map[string][]viewPartition{}}

	// ListTopics answers from a metadata request for all topics.
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		fail("franz: ListTopics: %v", err)
	}
	for name, td := range listed {
		if td.Err != nil {
			fail("franz: ListTopics %s: %v", name, td.Err)
		}
		v.Listed[name] = len(td.Partitions)
	}

	// BrokerMetadata: cluster id, controller and brokers from Metadata.
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		fail("franz: BrokerMetadata: %v", err)
	}
	v.ClusterIDs["BrokerMetadata"] = meta.Cluster
	v.Controller = meta.Controller
	for _, b := range meta.Brokers {
		v.Brokers = append(v.Brokers, viewBroker{b.NodeID, b.Host, b.Port})
	}

	// Metadata for the created topics: leaders, replicas, ISR per partition.
	names := topicNames(topics)
	described, err := adm.Metadata(ctx, names...)
	if err != nil {
		fail("franz: Metadata %v: %v", names, err)
	}
	v.ClusterIDs["Metadata"] = described.Cluster
	for name, td := range described.Topics {
		if td.Err != nil {
			fail("franz: Metadata %s: %v", name, td.Err)
		}
		for _, p := range td.Partitions.Sorted() {
			v.Described[name] = append(v.Described[name], viewPartition{p.Partition, p.Leader, p.Replicas, p.ISR})
		}
	}

	// DescribeCluster (KIP-919's API; kadm has no helper, so the raw kmsg request).
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		fail("franz: DescribeCluster: %v", err)
	}
	if e := kerrOf(dresp.ErrorCode); e != nil {
		fail("franz: DescribeCluster error: %v", e)
	}
	v.ClusterIDs["DescribeCluster"] = dresp.ClusterID
	if dresp.ControllerID != v.Controller {
		fail("franz: DescribeCluster controller %d, Metadata controller %d", dresp.ControllerID, v.Controller)
	}
	if len(dresp.Brokers) != len(v.Brokers) {
		fail("franz: DescribeCluster brokers %d, Metadata brokers %d", len(dresp.Brokers), len(v.Brokers))
	}
	return v
}

func saramaView(bootstrap string, topics map[string]int32) clusterView {
	cfg := sarama.NewConfig()
	cfg.ClientID = "sluice-go-sarama-admin" // otherwise Sarama's defaults, as tools use them
	client, err := sarama.NewClient([]string{bootstrap}, cfg)
	if err != nil {
		fail("sarama: new client: %v", err)
	}
	defer client.Close()
	adm, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		fail("sarama: new cluster admin: %v", err)
	}
	for name, partitions := range topics {
		if err := adm.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
			fail("sarama: CreateTopic %s: %v", name, err)
		}
	}
	waitLed("sarama", 45*time.Second, func() (map[string][]int32, error) {
		md, err := adm.DescribeTopics(topicNames(topics))
		leaders := map[string][]int32{}
		for _, tm := range md {
			if tm.Err == sarama.ErrNoError {
				for _, p := range tm.Partitions {
					leaders[tm.Name] = append(leaders[tm.Name], p.Leader)
				}
			}
		}
		return leaders, err
	}, topics)
	v := clusterView{Client: "sarama ClusterAdmin", ClusterIDs: map[string]string{}, Listed: map[string]int{},
		Described: map[string][]viewPartition{}}

	listed, err := adm.ListTopics()
	if err != nil {
		fail("sarama: ListTopics: %v", err)
	}
	for name, td := range listed {
		v.Listed[name] = int(td.NumPartitions)
	}

	brokers, controller, err := adm.DescribeCluster()
	if err != nil {
		fail("sarama: DescribeCluster: %v", err)
	}
	v.Controller = controller
	for _, b := range brokers {
		host, port, err := net.SplitHostPort(b.Addr())
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			fail("sarama: broker %d address %q", b.ID(), b.Addr())
		}
		v.Brokers = append(v.Brokers, viewBroker{b.ID(), host, int32(p)})
	}

	names := topicNames(topics)
	described, err := adm.DescribeTopics(names)
	if err != nil {
		fail("sarama: DescribeTopics %v: %v", names, err)
	}
	for _, tm := range described {
		if tm.Err != sarama.ErrNoError {
			fail("sarama: DescribeTopics %s: %v", tm.Name, tm.Err)
		}
		for _, p := range tm.Partitions {
			if p.Err != sarama.ErrNoError {
				fail("sarama: DescribeTopics %s/%d: %v", tm.Name, p.ID, p.Err)
			}
			v.Described[tm.Name] = append(v.Described[tm.Name], viewPartition{p.ID, p.Leader, p.Replicas, p.Isr})
		}
	}

	// ClusterAdmin does not return the cluster id; the controller's Metadata answer carries it
	// (Metadata v2+), asked through the same client's broker connection.
	ctrl, err := adm.Controller()
	if err != nil {
		fail("sarama: Controller: %v", err)
	}
	md, err := ctrl.GetMetadata(&sarama.MetadataRequest{Version: 7, Topics: names})
	if err != nil {
		fail("sarama: GetMetadata: %v", err)
	}
	if md.ClusterID == nil {
		fail("sarama: Metadata v7 without a cluster id")
	}
	v.ClusterIDs["Metadata"] = *md.ClusterID
	return v
}
