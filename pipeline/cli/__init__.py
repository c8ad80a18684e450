"""The commands: `csdata`'s parser and error lines (`main`), and one module of thin command
functions per dataset (`record`, `cosmos`, `protoqa`) plus the commands every dataset shares
(`releases`: release, reproduce, diff; `provenance`: what a run records of its command)."""
