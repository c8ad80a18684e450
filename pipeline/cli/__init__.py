"""The commands: `csdata`'s parser and error lines (`main`), running a command through the output
protocol (`run`), one module of thin command functions per dataset (`record`, `cosmos`,
`protoqa`; the crowd round trips of ReCoRD and ProtoQA in `record_crowd`, `protoqa_crowd`) plus
the commands every dataset shares (`releases`: release, reproduce, diff; `provenance`: what a run
records of its command)."""
