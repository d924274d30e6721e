"""eos-chaos clusters: fetching Kafka and Toxiproxy, rendering configs, the cluster backends."""
