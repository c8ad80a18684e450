"""Reading inputs and writing outputs on any Beam filesystem: matching and cutting files, decoding, untrusted input limits, Parquet tables and shards."""
