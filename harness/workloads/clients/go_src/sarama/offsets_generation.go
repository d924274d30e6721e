package main

import "github.com/IBM/sarama"

// addOffsets adds a transaction's offsets with the group generation and member they were consumed
// under (TxnOffsetCommit v3, KIP-447: a member that lost its partitions is fenced). sarama 1.50.2+.
func addOffsets(ap sarama.AsyncProducer, offsets map[string][]*sarama.PartitionOffsetMetadata, group string,
	s sarama.ConsumerGroupSession) error {
	return ap.AddOffsetsToTxnWithGroupMetadata(offsets, sarama.NewConsumerGroupMetadataFromSession(s, group, nil))
}
