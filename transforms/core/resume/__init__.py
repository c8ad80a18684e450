"""What a run keeps so that its rerun after a kill goes on: the model memo, the checkpoint, whole writes and removals, named crash points."""
