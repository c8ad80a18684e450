"""The engine: runner options and local tuning (`runner`), Flink submission and monitoring
(`flink`), the SDK worker's boot command and plugin (`worker_boot`, `worker`), object-store calls
and how a storage failure reads (`stores`), and the driver's progress lines. Dataset code never
imports it; it never imports a dataset."""
