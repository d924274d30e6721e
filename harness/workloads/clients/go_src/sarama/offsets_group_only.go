package main

import "github.com/IBM/sarama"

// addOffsets adds a transaction's offsets naming the group only: sarama before 1.50.2 sends no
// generation or member with them, so the broker cannot fence a member that lost its partitions.
func addOffsets(ap sarama.AsyncProducer, offsets map[string][]*sarama.PartitionOffsetMetadata, group string,
	_ sarama.ConsumerGroupSession) error {
	return ap.AddOffsetsToTxn(offsets, group)
}
