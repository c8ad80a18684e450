"""The one model layer: loading and checking spaCy and all-MiniLM-L6-v2, batched model calls, a process's memory."""
