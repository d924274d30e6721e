// The requests brokers send each other, where a fault between brokers picks one out: a coordinator's
// WriteTxnMarkers to a partition leader (one marker per transaction it ends), and a partition
// leader's AddPartitionsToTxn v4+ to a coordinator (KIP-890 verification, one entry per
// transaction). Both batch: one request carries the entries of many transactions, so their
// details are a list (batchKey) and a filtered rule takes the request when any entry passes.
package main

// apiWriteTxnMarkers: a coordinator -> partition leader request (the brokers' INTERNAL listener).
const apiWriteTxnMarkers int16 = 27

// batchKey is where a batched request's details keep one Details per entry.
const batchKey = "entries"

// batchBody decodes a batched broker request's entries into details[batchKey].
func batchBody(h Header, d *Decoder, flex bool, details Details) {
	var entries []Details
	for i, n := 0, d.ArrayLen(flex); i < n && d.Err == nil; i++ {
		e := Details{}
		if h.APIKey == apiAddPartitionsToTxn {
			e["transactional_id"] = d.String(flex)
		}
		e["producer_id"] = d.Int64()
		e["producer_epoch"] = d.Int16()
		if h.APIKey == apiWriteTxnMarkers {
			e["committed"] = d.Int8() != 0
		} else {
			e["verify_only"] = d.Int8() != 0
		}
		e["topics"] = topicPartitions(d, flex)
		if h.APIKey == apiWriteTxnMarkers {
			e["coordinator_epoch"] = d.Int32()
			if h.APIVersion >= 2 {
				e["transaction_version"] = d.Int8()
			}
		}
		if flex {
			d.SkipTags()
		}
		entries = append(entries, e)
	}
	details[batchKey] = entries
}

// topicPartitions reads an array of (topic name, [partition index]) as topic -> indexes.
func topicPartitions(d *Decoder, flex bool) map[string][]int32 {
	out := map[string][]int32{}
	for i, n := 0, d.ArrayLen(flex); i < n && d.Err == nil; i++ {
		name := d.String(flex)
		for j, m := 0, d.ArrayLen(flex); j < m && d.Err == nil; j++ {
			out[name] = append(out[name], d.Int32())
		}
		if flex {
			d.SkipTags()
		}
	}
	return out
}
