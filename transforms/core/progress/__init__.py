"""A run's progress: the Beam steps that count, the progress line and ETA, the datagrams workers send the driver."""
