//! A throwaway Cassandra 5 node (see below).
