//! Generation-fenced transactional snapshots with group commit (KIP-447), on Apache Kafka.
